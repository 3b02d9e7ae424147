"""atomic_output: write-then-rename for regular files only; devices, pipes and /dev/fd/N are
written through and stay what they are; the process umask is never touched."""

import os
import stat
import subprocess
import sys

import numpy as np
import pytest

from cpsvm.io.atomic import atomic_output

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# A reader in its own process: if the FIFO were renamed over, it would wait forever in
# open() on the orphaned pipe, and the timeout below reports it instead of hanging.
READER = "import sys; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read())"


def fifo_reader(path):
    return subprocess.Popen([sys.executable, "-c", READER, str(path)], stdout=subprocess.PIPE)


def collect(reader, timeout=30):
    try:
        out, _ = reader.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        reader.kill()
        reader.communicate()
        pytest.fail("the FIFO's reader never received an end of file")
    assert reader.returncode == 0
    return out


def test_fifo_is_written_through_not_replaced(tmp_path):
    fifo = tmp_path / "p"
    os.mkfifo(fifo)
    reader = fifo_reader(fifo)
    text = "".join(f"{i} line\n" for i in range(20000))  # more than a pipe buffer holds
    with atomic_output(fifo) as out:
        out.write(text)
    assert collect(reader) == text.encode()
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert os.listdir(tmp_path) == ["p"]


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="making a device node needs root"
)
def test_character_device_stays_a_device(tmp_path):
    null = tmp_path / "null"  # the same device as /dev/null, made where it harms nothing
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))
    with atomic_output(null) as out:
        out.write("predictions nobody keeps\n")
    st = os.lstat(null)
    assert stat.S_ISCHR(st.st_mode) and st.st_rdev == os.makedev(1, 3)
    assert os.listdir(tmp_path) == ["null"]


@pytest.mark.parametrize("prefix", ["/dev/fd", "/proc/self/fd"])
def test_dev_fd_of_a_pipe(prefix):
    r, w = os.pipe()
    try:
        with atomic_output(f"{prefix}/{w}") as out:
            out.write("through the pipe\n")
        os.close(w)
        w = None
        with os.fdopen(r, "rb") as f:
            r = None
            assert f.read() == b"through the pipe\n"
    finally:
        for fd in (r, w):
            if fd is not None:
                os.close(fd)


def test_symlink_to_regular_file_replaces_the_target(tmp_path):
    target = tmp_path / "real.model"
    target.write_text("old\n")
    link = tmp_path / "link.model"
    link.symlink_to("real.model")
    with atomic_output(link) as out:
        out.write("new\n")
    assert link.is_symlink() and os.readlink(link) == "real.model"
    assert target.read_text() == "new\n"
    assert sorted(os.listdir(tmp_path)) == ["link.model", "real.model"]


def test_dangling_symlink_creates_its_target(tmp_path):
    link = tmp_path / "link"
    link.symlink_to("made")
    with atomic_output(link) as out:
        out.write("x\n")
    assert link.is_symlink() and (tmp_path / "made").read_text() == "x\n"


def test_failure_leaves_the_old_file_and_no_temporary(tmp_path):
    f = tmp_path / "model"
    f.write_text("complete old model\n")
    with pytest.raises(RuntimeError):
        with atomic_output(f) as out:
            out.write("half a new")
            raise RuntimeError("interrupted")
    assert f.read_text() == "complete old model\n"
    assert os.listdir(tmp_path) == ["model"]


def test_umask_applied_by_the_kernel_never_changed(tmp_path, monkeypatch):
    old = os.umask(0o027)
    try:

        def no_umask(*args):
            raise AssertionError("os.umask called: it changes the whole process")

        monkeypatch.setattr(os, "umask", no_umask)
        f = tmp_path / "new.model"
        with atomic_output(f) as out:
            out.write("w\n")
        assert stat.S_IMODE(os.stat(f).st_mode) == 0o666 & ~0o027
        assert f.read_text() == "w\n"
    finally:
        monkeypatch.undo()
        os.umask(old)


def test_existing_file_keeps_its_permissions(tmp_path):
    f = tmp_path / "private.model"
    f.write_text("old\n")
    os.chmod(f, 0o600)
    with atomic_output(f) as out:
        out.write("new\n")
    assert stat.S_IMODE(os.stat(f).st_mode) == 0o600 and f.read_text() == "new\n"


def run_classify(output, **kw):
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cpsvm.cli.classify",
            "-v",
            "1",
            os.path.join(ROOT, "data", "samples", "a9a2k.test"),
            os.path.join(ROOT, "tests", "fixtures", "a9a3k.perf_linear.model"),
            str(output),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
        **kw,
    )


def test_cp_classify_into_a_fifo(tmp_path):
    fifo = tmp_path / "predictions"
    os.mkfifo(fifo)
    reader = fifo_reader(fifo)
    proc = run_classify(fifo)
    try:
        stdout, stderr = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        reader.kill()
        pytest.fail("cp_classify hung writing into the FIFO")
    assert proc.returncode == 0, stderr
    assert stdout.startswith("Accuracy on test set:")
    got = np.array(collect(reader).split(), dtype=float)
    ref = np.loadtxt(os.path.join(ROOT, "tests", "fixtures", "a9a2k.perf_linear.pred"))
    np.testing.assert_allclose(got, ref, rtol=1e-7, atol=5.1e-9)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_cp_classify_into_dev_fd():
    r, w = os.pipe()
    proc = run_classify(f"/dev/fd/{w}", pass_fds=(w,))
    os.close(w)
    with os.fdopen(r, "rb") as f:
        got = f.read()
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 0, stderr
    ref = np.loadtxt(os.path.join(ROOT, "tests", "fixtures", "a9a2k.perf_linear.pred"))
    np.testing.assert_allclose(np.array(got.split(), dtype=float), ref, rtol=1e-7, atol=5.1e-9)


def test_missing_directory_names_the_output(tmp_path):
    out = tmp_path / "no" / "such" / "model"
    with pytest.raises(FileNotFoundError) as err:
        with atomic_output(out) as f:
            f.write("x")
    assert err.value.filename == str(out)


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root may create files in any directory"
)
def test_writable_file_in_read_only_directory(tmp_path):
    d = tmp_path / "ro"
    d.mkdir()
    f = d / "model"
    f.write_text("old\n")
    os.chmod(d, 0o555)
    try:
        with atomic_output(f) as out:
            out.write("new\n")
        assert f.read_text() == "new\n"
    finally:
        os.chmod(d, 0o755)


def test_no_temporary_possible_writes_in_place(tmp_path, monkeypatch):
    import errno

    import cpsvm.io.atomic as atomic

    def refused(target):
        raise PermissionError(errno.EACCES, "Permission denied", target + ".tmp")

    monkeypatch.setattr(atomic, "_create_temporary", refused)
    f = tmp_path / "model"
    f.write_text("old\n")
    with atomic_output(f) as out:
        out.write("new\n")
    assert f.read_text() == "new\n"
    with pytest.raises(PermissionError) as err:  # and a new file it cannot make
        with atomic_output(tmp_path / "new") as out:
            out.write("x")
    assert err.value.filename == str(tmp_path / "new")
