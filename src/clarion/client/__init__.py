"""What every client of a Clarion server shares, the CLI and the demo alike: the HTTP and
WebSocket client, how a server error reads to a person (and the exit code it means), how tasks,
questions and events show in a terminal, and the one gate between server text and the terminal.
Imports nothing of the CLI's or the demo's: both stand on it."""
