"""Two twins (or two test sessions: scripts/test runs several side by side) on one Redis, each with its own
TWIN_LIVE_KEY_PREFIX: a frame one of them sends to its run 1 never reaches the other's run 1 sockets. Run and cluster
ids repeat from database to database, so the channel layer's groups take the prefix too (twin/settings.py)."""
import asyncio
import os
import subprocess
import sys
import uuid
from ast import literal_eval

from asgiref.sync import async_to_sync
from channels_redis.core import RedisChannelLayer
from django.conf import settings

from tests.processes import ROOT
from twin.live import store

# twin/settings.py alone makes CHANNEL_LAYERS (nothing changes it after): read without django.setup()'s app loading
PRINT_LAYER = "from django.conf import settings; print(repr(settings.CHANNEL_LAYERS['default']['CONFIG']))"


def layers_of_twins(*prefixes: str) -> list[RedisChannelLayer]:
    """The channel layers of twins started with TWIN_LIVE_KEY_PREFIX=each of ``prefixes``, their settings read as
    those twins' processes read them (a process of its own each, started side by side)."""
    procs = [subprocess.Popen([sys.executable, "-c", PRINT_LAYER], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True,
                              env={**os.environ, "TWIN_LIVE_KEY_PREFIX": prefix,
                                   "DJANGO_SETTINGS_MODULE": "twin.settings"})
             for prefix in prefixes]
    layers = []
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        config = literal_eval(out.strip().splitlines()[-1])
        assert config["hosts"][0]["address"] == settings.REDIS_URL
        layers.append(RedisChannelLayer(**config))
    return layers


def test_two_twins_on_one_redis_never_get_each_others_frames():
    # given two twins on one Redis, each with a socket on its run 1
    session = uuid.uuid4().hex[:8]
    first, second = layers_of_twins(f"test:{session}:a:", f"test:{session}:b:")
    group = store.group_name(store.run_stream(1))

    async def scenario():
        a, b = await first.new_channel(), await second.new_channel()
        await first.group_add(group, a)
        await second.group_add(group, b)
        try:
            # when the second sends a frame to its run 1
            await second.group_send(group, {"type": "live.frame", "seq": 1})
            # then the second's socket gets it, and the first's does not: the first's next message is the one its
            # own twin sends after it (a channel's messages arrive in the order they were sent)
            got = await asyncio.wait_for(second.receive(b), timeout=10)
            await first.group_send(group, {"type": "live.frame", "seq": 2})
            mine = await asyncio.wait_for(first.receive(a), timeout=10)
            return got, (None if mine["seq"] == 2 else mine)
        finally:
            await first.group_discard(group, a)
            await second.group_discard(group, b)

    got, leaked = async_to_sync(scenario)()
    assert got["seq"] == 1
    assert leaked is None, f"the first twin's run 1 socket got the second twin's frame: {leaked}"
