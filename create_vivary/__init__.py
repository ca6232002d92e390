"""create-vivary: lay down, adopt and check Vivary workspaces."""
