"""A file server on 127.0.0.1 for the shards-by-URL tests, as object stores and web
servers are (Content-Length, byte ranges, directory index pages), and as they go wrong:
the first folder of a path says how (the rest names a file under the root).

- ``/cut/F``: sends half of what it announced, then closes the connection;
- ``/error/F``: 500; ``/loop/F``: a redirect to itself; a missing file: 404;
- ``/mute/F``: accepts the request and never answers;
- ``/slow/F``: the right headers, then the body at one byte a second;
- ``/lying/F``: a Content-Length beyond its body, the connection kept open;
- ``/gzip/F``: the body gzipped with ``Content-Encoding: gzip`` (ranges ignored);
- ``/nolength/F``: no Content-Length (the end of the body is the connection's);
- ``/noranges/F``: ``Accept-Ranges: none``, a Range header ignored (the whole body).

Run as ``python http_site.py ROOT`` it serves ROOT and prints its address (a server
another process can kill)."""

import contextlib
import functools
import gzip
import http.server
import re
import sys
import threading

HOSTILE = ("cut", "error", "loop", "mute", "slow", "lying", "gzip", "nolength", "noranges")


class SiteHandler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    requests = None  # (path, Range header) of every GET
    stopped = None  # a threading.Event set when the server stops

    def log_message(self, *args):
        pass

    def do_HEAD(self):
        with contextlib.suppress(OSError):  # a client that went away (timed out)
            self.answer(head=True)

    def do_GET(self):
        self.requests.append((self.path, self.headers.get("Range")))
        with contextlib.suppress(OSError):
            self.answer(head=False)

    def answer(self, head):
        how, _, rest = self.path.lstrip("/").partition("/")
        if how not in HOSTILE:
            how, rest = None, self.path.lstrip("/")
        if how == "mute":
            self.stopped.wait()
            self.close_connection = True
            return
        if how == "error":
            return self.send_error(500)
        if how == "loop":
            self.send_response(302)
            self.send_header("Location", self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        try:
            with open(self.translate_path("/" + rest), "rb") as f:
                data = f.read()
        except (IsADirectoryError, FileNotFoundError):
            return super().do_HEAD() if head else super().do_GET()  # an index page, or 404
        start, end, status = 0, len(data), 200
        wanted = re.fullmatch(r"bytes=(\d+)-(\d*)", self.headers.get("Range") or "")
        if wanted and how not in ("gzip", "nolength", "noranges"):
            start = int(wanted.group(1))
            end = min(len(data), int(wanted.group(2)) + 1) if wanted.group(2) else len(data)
            status = 206
        body = data[start:end]
        if how == "gzip":
            body = gzip.compress(body)
        self.send_response(status)
        self.send_header("Content-Type", "application/octet-stream")
        if how == "gzip":
            self.send_header("Content-Encoding", "gzip")
        if how == "nolength":
            self.send_header("Connection", "close")
            self.close_connection = True
        else:
            self.send_header("Accept-Ranges", "none" if how == "noranges" else "bytes")
            extra = 1000 if how == "lying" else 0
            self.send_header("Content-Length", str(len(body) + extra))
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end - 1}/{len(data)}")
        self.end_headers()
        if head:
            return
        if how == "cut":
            self.wfile.write(body[: len(body) // 2])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
        elif how == "slow":
            for i in range(len(body)):
                if self.stopped.wait(1.0):
                    break
                self.wfile.write(body[i : i + 1])
                self.wfile.flush()
            self.close_connection = True
        elif how == "lying":
            self.wfile.write(body)
            self.wfile.flush()
            self.stopped.wait()  # the rest never comes, the connection kept open
            self.close_connection = True
        else:
            self.wfile.write(body)


class Site:
    """``root`` served on 127.0.0.1 (``base``: its URL) in a thread of this process."""

    def __init__(self, root):
        self.requests = []
        self.stopped = threading.Event()
        handler = functools.partial(
            type("Handler", (SiteHandler,), {"requests": self.requests, "stopped": self.stopped}),
            directory=str(root),
        )
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.stopped.set()
        self.server.shutdown()
        self.server.server_close()


if __name__ == "__main__":
    site = Site(sys.argv[1])
    print(site.base, flush=True)
    site.thread.join()
