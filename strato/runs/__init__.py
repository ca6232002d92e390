"""Flow runs: state machine (`engine`), storage as git refs (`store`), agent dispatch
(`agents`), fanout over worktrees (`fanout`) and the operations that tie them together
(`service`)."""
