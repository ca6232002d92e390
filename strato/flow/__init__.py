"""Flow specs: the Stratum v1 language (IR, validation with Stratum's codes, `${...}`
references and the expression language). The flow engine builds on this API; see
docs/flows.md."""
