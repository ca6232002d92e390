"""Starting programs: agent config and its trust, argv templates, pacing, bounded
output, process groups, detached spawns and reaping."""
