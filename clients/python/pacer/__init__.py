"""pacer - a Python client for the pacer coordinator's REST API (docs/openapi.json).

Your single-machine PyTorch module becomes a pacer job and comes back trained:

    import pacer
    client = pacer.Client("https://coordinator:8443", token, cafile="ca.pem")
    job = client.train(net, torch.randn(1, 1, 28, 28), {"dataset": {"name": "mnist"},
                                                       "algorithm": {"name": "ssgd"},
                                                       "workers": 4, "epochs": 5})
    job.wait()                          # prints progress, returns the final state
    net.load_state_dict(job.state_dict())

Only the standard library is needed to talk to the coordinator; torch and onnx (Debian's
python3-torch and python3-onnx) are imported when a module is exported or weights are
read back.
"""
from .client import Client, Experiment, GenerateStream, Job, PacerError

__all__ = ["Client", "Experiment", "Job", "PacerError"]
