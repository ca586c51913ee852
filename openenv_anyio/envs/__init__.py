"""Built-in environments and adapters for existing ones."""
