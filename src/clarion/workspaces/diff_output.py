"""Reading what `git diff` prints: the `-z --raw --numstat` records and the patch text.

Pure functions over bytes, so the parsing is tested without a repository. Paths come NUL-separated
(`-z`), so a name with spaces, quotes or non-ASCII letters arrives exactly as it is on disk.
"""

from __future__ import annotations

from dataclasses import dataclass

# git's one-letter statuses, folded into the four the wire knows. A type change (file <-> symlink)
# and an unmerged entry are still "the content at this path differs", so they read as modified.
_STATUS = {"A": "added", "C": "added", "D": "deleted", "M": "modified", "R": "renamed"}

PATCH_HEADER = b"diff --git "


@dataclass(frozen=True, slots=True)
class RawEntry:
    path: str
    old_path: str | None
    status: str


@dataclass(frozen=True, slots=True)
class LineCounts:
    additions: int
    deletions: int
    binary: bool


def _name(raw: bytes) -> str:
    # Paths are bytes on disk; a name that is not UTF-8 still shows, with replacement characters.
    return raw.decode("utf-8", errors="replace")


def split_listing(output: bytes) -> tuple[bytes, bytes]:
    """`git diff -z --raw --numstat --patch` into its NUL-separated listing and the patch text.

    No record of the listing is empty, and git ends it with one empty record: the first two
    NULs in a row close it.
    """
    end = output.find(b"\0\0")
    if end < 0:
        return output, b""
    return output[: end + 1], output[end + 2 :]


def parse_raw_and_numstat(output: bytes) -> tuple[list[RawEntry], dict[str, LineCounts]]:
    """Split `git diff -z --raw --numstat` into its raw entries (in order) and counts by path.

    A raw record is `:modes shas STATUS\\0path\\0` with a second path for a rename or copy; a
    numstat record is `added\\tdeleted\\tpath\\0`, or `added\\tdeleted\\t\\0old\\0new\\0` for a
    rename. A binary file's counts are `-`.
    """
    tokens = output.split(b"\0")
    entries: list[RawEntry] = []
    counts: dict[str, LineCounts] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not token:
            continue
        if token.startswith(b":"):
            letter = token.split(b" ")[-1][:1].decode("ascii", errors="replace")
            if letter in ("R", "C"):
                old, new = _name(tokens[i]), _name(tokens[i + 1])
                i += 2
                entries.append(RawEntry(new, old if letter == "R" else None, _STATUS[letter]))
            else:
                entries.append(RawEntry(_name(tokens[i]), None, _STATUS.get(letter, "modified")))
                i += 1
            continue
        added, deleted, path = token.split(b"\t", 2)
        if not path:
            path = tokens[i + 1]
            i += 2
        binary = added == b"-" or deleted == b"-"
        counts[_name(path)] = LineCounts(
            0 if binary else int(added), 0 if binary else int(deleted), binary
        )
    return entries, counts


def split_patches(output: bytes) -> list[bytes]:
    """The patch text of several files, one `diff --git` section each, in git's order."""
    sections: list[bytes] = []
    start = -1
    position = 0
    for line in output.splitlines(keepends=True):
        # Every content line of a hunk starts with " ", "+", "-" or "\\", so only a file's own
        # header line can start with the header's words.
        if line.startswith(PATCH_HEADER):
            if start >= 0:
                sections.append(output[start:position])
            start = position
        position += len(line)
    if start >= 0:
        sections.append(output[start:])
    return sections


def patch_header(entry: RawEntry) -> bytes:
    """The first line git prints for this entry's patch (for names git does not quote)."""
    old = entry.old_path if entry.old_path is not None else entry.path
    return PATCH_HEADER + f"a/{old} b/{entry.path}".encode()


def cut_patch(patch: bytes, max_bytes: int) -> tuple[str, bool]:
    """The patch as text, at most `max_bytes` long, and whether it was cut.

    The cut falls after the last whole line that fits, so a hunk is never left with half a line;
    a single line longer than the cap is cut inside it, but never inside a UTF-8 character.
    """
    if len(patch) <= max_bytes:
        return patch.decode("utf-8", errors="replace"), False
    head = patch[:max_bytes]
    newline = head.rfind(b"\n")
    head = head[: newline + 1] if newline >= 0 else _whole_characters(head)
    return head.decode("utf-8", errors="replace"), True


def _whole_characters(data: bytes) -> bytes:
    """`data` without a UTF-8 character cut off at its end."""
    # Step back over at most three continuation bytes to the start of the last character; keep it
    # only if all of its bytes are there.
    for back in range(1, min(4, len(data)) + 1):
        byte = data[-back]
        if byte & 0b1100_0000 == 0b1000_0000:
            continue
        if byte < 0x80:
            return data
        needed = 2 if byte >= 0xC0 and byte < 0xE0 else 3 if byte < 0xF0 else 4
        return data if back >= needed else data[:-back]
    return data
