from tropo.cli.main import main

main(prog_name="tropo")  # named as its console script: messages say `tropo: ...`
