# propulate-rs --preload: one Python per rank that imports the listed modules once, then forks each
# trial's process from itself, so that no trial pays for the imports again (see fork_server.rs).
#
#   python -c <this> MODULE[,MODULE...] [the trial command, only to be seen in ps]
#
# Requests come on stdin, replies go to the original stdout, one JSON object per line:
#   {"stdout": FIFO, "stderr": FILE, "env": {..}, "argv": [..], "module": bool, "unbuffered": bool}
#   -> {"pid": N} once the process runs in its own process group, {"status": S} (the raw wait
#      status) once it has ended; or {"error": "..."} when it could not be started.
# Everything else this Python prints (an import's chatter, a traceback) goes to its stderr, a log.
import atexit
import ctypes
import json
import os
import runpy
import signal
import sys
import threading
import traceback

PR_SET_PDEATHSIG = 1


def exit_code(code):
    """The status a Python ending with SystemExit(code) exits with."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


def run_trial(request, stdout_fd, replies_fd, server_pid):
    """In the forked process: become the trial's process, run its program as __main__, exit as a
    Python running it from the start would. Never returns."""
    code = 1
    try:
        os.setpgid(0, 0)
        # Killed when the server dies (and it dies with its rank): no trial outlives its job.
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != server_pid:
            os._exit(1)
        os.close(replies_fd)
        err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(err, 2)
        os.close(err)
        os.dup2(stdout_fd, 1)
        os.close(stdout_fd)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        os.environ.update(request["env"])
        if request["unbuffered"]:
            sys.stdout.reconfigure(write_through=True)
            sys.stderr.reconfigure(write_through=True)
        sys.argv = list(request["argv"])
        if request["module"]:
            sys.path[0] = os.getcwd()
            runpy.run_module(sys.argv[0], run_name="__main__", alter_sys=True)
        else:
            sys.path[0] = os.path.dirname(os.path.realpath(sys.argv[0]))
            runpy.run_path(sys.argv[0], run_name="__main__")
        code = 0
    except SystemExit as e:
        code = exit_code(e.code)
    except BaseException:
        traceback.print_exc()
        code = 1
    finally:
        # What an interpreter does when its program ends: wait for its threads, run atexit.
        try:
            threading._shutdown()
            atexit._run_exitfuncs()
            sys.stdout.flush()
            sys.stderr.flush()
        except BaseException:
            traceback.print_exc()
        os._exit(code)


def main():
    replies_fd = os.dup(1)
    replies = os.fdopen(replies_fd, "w", buffering=1)
    os.dup2(2, 1)
    for name in sys.argv[1].split(","):
        __import__(name)
    server_pid = os.getpid()
    replies.write('{"ready": true}\n')
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        sys.stderr.flush()
        try:
            stdout_fd = os.open(request["stdout"], os.O_WRONLY)
        except OSError as e:
            replies.write(json.dumps({"error": str(e)}) + "\n")
            continue
        try:
            pid = os.fork()
        except OSError as e:
            os.close(stdout_fd)
            replies.write(json.dumps({"error": str(e)}) + "\n")
            continue
        if pid == 0:
            run_trial(request, stdout_fd, replies_fd, server_pid)
        os.close(stdout_fd)
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass  # the child did it first, or has ended already
        replies.write(json.dumps({"pid": pid}) + "\n")
        _, status = os.waitpid(pid, 0)
        replies.write(json.dumps({"status": status}) + "\n")


main()
