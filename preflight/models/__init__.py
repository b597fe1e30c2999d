"""Model knowledge: exact parameter counts from configs, the catalogue, custom modules."""
