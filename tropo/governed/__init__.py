"""The governed formats: Task Capsule, Execution Receipt, gate verdict, governed
verification and context repairs."""
