"""The server's memory bounds: the budget of inbound bytes in flight (``SRV-MEM-1``) and
large frames parsed off the event loop within it (``SRV-MEM-2``)."""
