"""Hook programs, their installer and the registry of what runs in them."""
