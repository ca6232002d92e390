"""Flow runs: the state machine (`engine/`), storage as git refs (`store`), the operations
that tie them together (`service`), work handed to programs (`dispatch/`), background runs
(`background/`), verification lanes (`lanes/`) and how a run looks from outside (`views/`)."""
