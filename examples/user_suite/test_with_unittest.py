"""unittest (or any Python code) with mockstore.MockServer: a real server in a thread."""

import unittest

import httpx

from mockstore import MockServer


class PetClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.server = MockServer(scenario="default").start()  # port 0: a free port
        cls.addClassCleanup(cls.server.stop)

    def setUp(self):
        self.server.control.reset()  # every test starts from the scenario's state

    def test_creates_a_pet(self):
        key = self.server.control.issue_key("pro").key
        created = httpx.post(
            self.server.url + "/pets",
            json={"name": "Nala", "categoryId": 7},
            headers={"Authorization": f"Bearer {key}"},
        )
        self.assertEqual(created.status_code, 201)
        self.assertEqual(created.json()["id"], 21)
        self.server.control.verify("createPet", count=1, body_contains={"name": "Nala"})

    def test_a_fresh_state_each_time(self):
        listed = httpx.get(
            self.server.url + "/pets",
            params={"limit": 100},
            headers={"Authorization": "Bearer free-key"},
        )
        self.assertEqual(len(listed.json()), 20)


if __name__ == "__main__":
    unittest.main()
