"""Building and running the server: the composition root and a server process's life.

`wiring` builds every implementation and hands them to the services; `serving` runs a server
around it (bind, lead, recover, admit work); `cluster` and `replica` are its cluster half.
Only the CLI (`clarion serve`) and tests import this package.
"""
