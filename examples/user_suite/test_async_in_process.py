"""In process, without a server: the ASGI app through httpx.ASGITransport, steered by
AsyncControl. `pytest.mark.anyio` comes with anyio, which httpx depends on."""

import httpx
import pytest

from mockstore import AsyncControl, create_app


@pytest.mark.anyio
async def test_in_process():
    app = create_app("default")
    transport = httpx.ASGITransport(app=app)
    async with (
        AsyncControl(transport=transport) as mock,
        httpx.AsyncClient(transport=transport, base_url="http://mockstore/v1") as client,
    ):
        key = (await mock.issue_key("free")).key
        response = await client.get("/pets", headers={"Authorization": f"Bearer {key}"})
        assert response.status_code == 200
        used = {k.key: k.minute.used for k in await mock.keys()}
        assert used[key] == 1
        verified = await mock.verify("listPets", count=1, key=key)
        assert verified.count == 1
