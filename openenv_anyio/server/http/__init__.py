"""The HTTP surface: the Quart-Trio app (section 9's routes, ``/openapi.json``), what
``/metadata`` and ``/schema`` say, and the request head read before Hypercorn does."""
