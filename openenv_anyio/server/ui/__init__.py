"""The dashboard surface: the ``/ws/ui`` broadcast hub, its endpoint, and ``GET /web``."""
