"""Keras' RemoteMonitor: posts each epoch's logs to a server (over urllib: Keras' requests is
not needed)."""
import json
import urllib.error
import urllib.parse
import urllib.request
import warnings

import numpy as np

from .._training import Callback


class RemoteMonitor(Callback):
    """At each epoch's end, POSTs {"epoch": e, **logs} to root + path: as the form field `field`
    holding the JSON text, or (send_as_json=True) as a JSON body. An unreachable server gives a
    warning, not an error, as Keras."""

    def __init__(self, root="http://localhost:9000", path="/publish/epoch/end/", field="data", headers=None,
                 send_as_json=False):
        super().__init__()
        self.root = root
        self.path = path
        self.field = field
        self.headers = headers
        self.send_as_json = send_as_json

    def on_epoch_end(self, epoch, logs=None):
        send = {"epoch": epoch}
        for k, v in (logs or {}).items():
            send[k] = v.item() if isinstance(v, (np.ndarray, np.generic)) else v
        headers = dict(self.headers or {})
        if self.send_as_json:
            body = json.dumps(send).encode()
            headers.setdefault("Content-Type", "application/json")
        else:
            body = urllib.parse.urlencode({self.field: json.dumps(send)}).encode()
            headers.setdefault("Content-Type", "application/x-www-form-urlencoded")
        request = urllib.request.Request(self.root + self.path, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                response.read()
        except (urllib.error.URLError, OSError):
            warnings.warn(f"Could not reach RemoteMonitor root server at {self.root}", stacklevel=2)
