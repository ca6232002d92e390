from tropo.cli.main import main

main()
