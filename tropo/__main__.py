from tropo.cli import main

main()
