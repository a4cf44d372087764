from clarion.cli import main

main()
