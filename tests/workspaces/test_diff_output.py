"""Parsing git's diff output and cutting patches, without a repository."""

from __future__ import annotations

from clarion.workspaces.diff_output import (
    cut_patch,
    parse_raw_and_numstat,
    split_listing,
    split_patches,
)


def test_raw_and_numstat_records_pair_up_by_path_including_renames() -> None:
    output = (
        b":100644 100644 aaa bbb M\0a b.txt\0"
        b":100644 100644 ccc ccc R097\0old.txt\0new.txt\0"
        b":000000 100644 000 ddd A\0img.png\0"
        b"3\t1\ta b.txt\0"
        b"1\t1\t\0old.txt\0new.txt\0"
        b"-\t-\timg.png\0"
    )
    entries, counts = parse_raw_and_numstat(output)
    assert [(e.path, e.old_path, e.status) for e in entries] == [
        ("a b.txt", None, "modified"),
        ("new.txt", "old.txt", "renamed"),
        ("img.png", None, "added"),
    ]
    assert counts["a b.txt"].additions == 3 and counts["new.txt"].deletions == 1
    assert counts["img.png"].binary and counts["img.png"].additions == 0


def test_a_type_change_reads_as_modified() -> None:
    entries, _ = parse_raw_and_numstat(b":120000 100644 aaa bbb T\0link\0")
    assert entries[0].status == "modified"


def test_patches_split_at_each_file_header_only() -> None:
    text = (
        b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-diff --git fake\n+y\n"
        b"diff --git a/z b/z\nBinary files differ\n"
    )
    first, second = split_patches(text)
    assert first.endswith(b"+y\n") and second.startswith(b"diff --git a/z b/z")
    assert split_patches(b"") == []


def test_a_patch_under_the_cap_is_whole() -> None:
    assert cut_patch(b"abc\n", 4) == ("abc\n", False)


def test_a_cut_falls_after_the_last_whole_line() -> None:
    assert cut_patch(b"one\ntwo\nthree\n", 10) == ("one\ntwo\n", True)


def test_a_cut_inside_a_line_never_splits_a_character() -> None:
    data = "aé€😀".encode()  # 1 + 2 + 3 + 4 bytes
    for cap in range(1, len(data)):
        text, truncated = cut_patch(data, cap)
        assert truncated and "\ufffd" not in text
        assert len(text.encode()) <= cap
    assert cut_patch(data, 6) == ("aé€", True)
    assert cut_patch(data, 9) == ("aé€", True)


def test_the_listing_ends_at_its_empty_record_and_the_patch_follows() -> None:
    output = (
        b":000000 100644 0 a A\0new.txt\x001\t0\tnew.txt\0\0diff --git a/new.txt b/new.txt\n+x\n"
    )
    listing, patch = split_listing(output)
    assert listing == b":000000 100644 0 a A\0new.txt\x001\t0\tnew.txt\0"
    assert patch == b"diff --git a/new.txt b/new.txt\n+x\n"
    assert split_listing(b"") == (b"", b"")
