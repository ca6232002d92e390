"""The flow expression language (`ensure`, `when`, `set`, `iterate.until`): our own
lexer, parser and evaluator over JSON values; never Python's `eval`."""
