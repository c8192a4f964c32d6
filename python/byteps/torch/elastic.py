"""byteps.torch.elastic on Caravan: caravan.torch.elastic (Horovod's
elastic API: run, TorchState, ObjectState, ElasticSampler)."""
from caravan.torch.elastic import *  # noqa: F401,F403
from caravan.torch.elastic import ElasticSampler, ObjectState, State, TorchState, run  # noqa: F401
