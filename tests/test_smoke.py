from tests.support import assert_conforms, auth


def test_list_pets_over_real_http(server):
    with server.client() as http:
        response = http.get("/v1/pets", params={"limit": 5}, headers=auth("free"))
    assert response.status_code == 200
    pets = assert_conforms(response)
    assert [p["id"] for p in pets] == [1, 2, 3, 4, 5]


def test_in_process_client(client):
    response = client.get("/v1/pets/1", headers=auth("pro"))
    assert assert_conforms(response)["name"] == "Rex"
    assert response.headers["sunset"] == "Thu, 05 Dec 2030 00:00:00 GMT"
