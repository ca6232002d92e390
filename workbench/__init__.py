"""The workbench (``vivary serve``): a local web page over the repository's runs, gates,
board, guard, heartbeat and lanes. It holds no state of its own."""
