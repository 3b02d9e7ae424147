"""A real S3-compatible server for the cluster tests (tests/cluster/test_s3.py) and
benchmarks/bench_s3.py: ``moto_server`` on 127.0.0.1 (a
free port), one per pytest process, its access checked as AWS checks it: an IAM user
with every permission is made first, then the server refuses any request not signed
with that user's key (moto's ``/moto-api/reset-auth``). The tests give the commands
(and so the local:N workers, which inherit the command's environment) the server's
address and key in AWS's own variables (:meth:`MotoS3.environment`)."""

import importlib.util
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass

# What the tests need of moto and s3fs: moto's server mode (Flask) and s3fs (boto's
# asynchronous client). All are in the [test] extra.
S3_PACKAGES = ("moto", "flask", "s3fs", "boto3")
EVERYTHING = {"Effect": "Allow", "Action": "*", "Resource": "*"}
USER_POLICY = {"Version": "2012-10-17", "Statement": [EVERYTHING]}


def start_moto(log_path):
    """``moto_server`` on 127.0.0.1 at a free port (it binds port 0 and prints the one it
    got), its output in ``log_path``; (process, endpoint URL)."""
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", "0"],
            stdout=log,
            stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        found = re.search(r"Running on (http://127\.0\.0\.1:\d+)", open(log_path).read())
        if found:
            return proc, found.group(1)
        time.sleep(0.05)
    proc.kill()
    proc.wait()
    raise RuntimeError(f"moto_server did not start: {open(log_path).read()[-2000:]}")


def _post(url, text):
    request = urllib.request.Request(
        url, data=text.encode(), method="POST", headers={"Content-Type": "text/plain"}
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return response.read()


@dataclass
class MotoS3:
    """A running moto server (``proc``) at ``endpoint``, refusing every request not
    signed with (``key``, ``secret``)."""

    proc: subprocess.Popen
    endpoint: str
    key: str
    secret: str

    def environment(self, **settings):
        """This process's environment for a command: AWS's variables point at the server
        with the right key (``settings`` change them; a value None removes one), and
        nothing else of AWS's is read (no shared files, no instance metadata)."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        env.update(
            AWS_ENDPOINT_URL=self.endpoint,
            AWS_ACCESS_KEY_ID=self.key,
            AWS_SECRET_ACCESS_KEY=self.secret,
            AWS_DEFAULT_REGION="us-east-1",
            AWS_EC2_METADATA_DISABLED="true",
            AWS_CONFIG_FILE=os.devnull,
            AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        )
        for name, value in settings.items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = value
        return env

    def file_system(self):
        """An s3fs file system on the server, this process's own (no cached listings)."""
        import s3fs

        return s3fs.S3FileSystem(
            key=self.key,
            secret=self.secret,
            endpoint_url=self.endpoint,
            skip_instance_cache=True,
            use_listings_cache=False,
        )


def moto_s3_server(log_path) -> MotoS3:
    """A moto server started, an IAM user with every permission and its key made, then
    the server's access checks turned on."""
    import boto3

    proc, endpoint = start_moto(log_path)
    iam = boto3.client(
        "iam",
        endpoint_url=endpoint,
        aws_access_key_id="setup",
        aws_secret_access_key="setup",
        region_name="us-east-1",
    )
    iam.create_user(UserName="cpsvm")
    iam.put_user_policy(
        UserName="cpsvm", PolicyName="everything", PolicyDocument=json.dumps(USER_POLICY)
    )
    key = iam.create_access_key(UserName="cpsvm")["AccessKey"]
    _post(f"{endpoint}/moto-api/reset-auth", "0")  # every request from now on checked
    return MotoS3(proc, endpoint, key["AccessKeyId"], key["SecretAccessKey"])


def s3_missing():
    """Why the S3 tests cannot run here (None if they can)."""
    missing = [name for name in S3_PACKAGES if importlib.util.find_spec(name) is None]
    if missing:
        return (
            f"{', '.join(missing)} not installed: the S3 tests need moto[server] and s3fs "
            "(pip install -e '.[test]')"
        )
    return None
