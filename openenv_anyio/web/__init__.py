"""The dashboard page served at ``/web`` (``index.html``, ``dashboard.js``, ``dashboard.css``)."""
