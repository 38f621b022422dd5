"""agentloop: a measured improvement loop for tool-using customer-service agents."""

__version__ = "0.1.0"
