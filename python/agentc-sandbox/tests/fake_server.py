"""A stand-in for `agentc serve --stdio` that only speaks the framing (no containers): the
client's transport is tested with it where no engine is needed.

Methods: initialize; echo {value, delay?} answers after `delay` seconds (so answers overtake
each other); exec {stream?} sends two exec.output notifications when streamed; exec {hang: true,
register_after?} runs until cancelled, registered for `cancel` only after `register_after`
seconds (as a server still resolving the sandbox), then answers -32800; cancel {id} as the
server's; cancels lists the ids cancel was asked for; fail answers an agentc error; die exits 3
without answering; shutdown answers and exits 0.
"""

import base64
import json
import sys
import threading
import time

lock = threading.Lock()
hanging = {}  # exec request id -> the event cancel sets
asked = []  # the ids cancel was asked for, with its answer


def send(message):
    with lock:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()


def answer(request_id, result=None, error=None):
    message = {"jsonrpc": "2.0", "id": request_id}
    if error is not None:
        message["error"] = error
    else:
        message["result"] = result
    send(message)


def handle(request):
    request_id, method, params = request.get("id"), request.get("method"), request.get("params", {})
    if method == "initialize":
        answer(request_id, {"protocol": 1, "agentc": "fake", "backend": "api", "engine": "docker"})
    elif method == "echo":
        time.sleep(params.get("delay", 0))
        answer(request_id, {"value": params.get("value")})
    elif method == "exec" and params.get("hang"):
        time.sleep(params.get("register_after", 0))
        event = threading.Event()
        with lock:
            hanging[request_id] = event
        event.wait(30)
        time.sleep(0.2)  # stopping the command's processes
        answer(
            request_id,
            error={
                "code": -32800,
                "message": "the request was cancelled; the command's processes were stopped",
                "data": {"exit_code": 130, "kind": "cancelled", "hint": None},
            },
        )
    elif method == "cancel":
        with lock:
            event = hanging.pop(params.get("id"), None)
        if event is not None:
            event.set()
        asked.append([params.get("id"), event is not None])
        answer(request_id, {"cancelled": event is not None})
    elif method == "cancels":
        answer(request_id, {"asked": list(asked)})
    elif method == "exec":
        if params.get("stream"):
            for stream, data in (("stdout", b"one\n"), ("stderr", b"two\n")):
                send(
                    {
                        "jsonrpc": "2.0",
                        "method": "exec.output",
                        "params": {
                            "id": request_id,
                            "stream": stream,
                            "data": base64.b64encode(data).decode(),
                        },
                    }
                )
            out = ""
        else:
            out = base64.b64encode(b"one\n").decode()
        answer(request_id, {"exit_code": 0, "timed_out": False, "stdout": out, "stderr": ""})
    elif method == "fail":
        answer(
            request_id,
            error={
                "code": -32000,
                "message": "no such container x\n  hint: `agentc ps --all` lists agentc's containers",
                "data": {
                    "exit_code": 1,
                    "kind": "not_found",
                    "hint": "`agentc ps --all` lists agentc's containers",
                },
            },
        )
    elif method == "die":
        sys.stderr.write("fake: dying on request\n")
        sys.stderr.flush()
        sys.exit(3)
    elif method == "shutdown":
        answer(request_id, {"deleted": []})
        sys.exit(0)
    else:
        answer(request_id, error={"code": -32601, "message": f"no method {method!r}"})


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        if request.get("method") in ("die", "shutdown", "initialize"):
            handle(request)
        else:
            threading.Thread(target=handle, args=(request,), daemon=True).start()


if __name__ == "__main__":
    main()
