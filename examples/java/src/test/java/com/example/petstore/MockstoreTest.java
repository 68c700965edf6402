package com.example.petstore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;

/**
 * A client team's session against mockstore in a container: a scenario by name, a key issued
 * and exhausted, the 429 read, the scenario clock advanced instead of sleeping, the retry, the
 * calls verified, the report kept under target/ for CI to upload, the mock reset.
 *
 * <p>The shapes are those of the control API's OpenAPI document
 * (/__mockstore/control.openapi.json); openapi-generator can make a typed client from it.
 */
@Testcontainers
class MockstoreTest {
  // The image built from mockstore's Dockerfile (docker build -t mockstore:local .).
  @Container
  static final GenericContainer<?> MOCKSTORE =
      new GenericContainer<>("mockstore:local")
          .withExposedPorts(8080)
          .withEnv("MOCKSTORE_SCENARIO", "default")
          .waitingFor(Wait.forHttp("/__mockstore/health").forStatusCode(200));

  static final HttpClient HTTP = HttpClient.newHttpClient();
  static final ObjectMapper JSON = new ObjectMapper();

  static String root() {
    return "http://" + MOCKSTORE.getHost() + ":" + MOCKSTORE.getMappedPort(8080);
  }

  static HttpResponse<String> send(String method, String path, String type, String body, Map<String, String> headers)
      throws IOException, InterruptedException {
    HttpRequest.Builder request =
        HttpRequest.newBuilder(URI.create(root() + path))
            .header("X-Mockstore-Client", "java-recipe")
            .method(method, body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
    if (type != null) request.header("Content-Type", type);
    headers.forEach(request::header);
    return HTTP.send(request.build(), HttpResponse.BodyHandlers.ofString());
  }

  static JsonNode control(String method, String path, Object body) throws IOException, InterruptedException {
    String json = body == null ? null : JSON.writeValueAsString(body);
    HttpResponse<String> response = send(method, "/__mockstore" + path, json == null ? null : "application/json", json, Map.of());
    return response.body().isEmpty() ? null : JSON.readTree(response.body());
  }

  static HttpResponse<String> listPets(String key) throws IOException, InterruptedException {
    return send("GET", "/v1/pets", null, null, Map.of("Authorization", "Bearer " + key));
  }

  @Test
  void aKeyOfThreeAMinuteWaitsForTheClock() throws Exception {
    assertEquals(200, send("PUT", "/__mockstore/scenario", "text/plain", "default", Map.of()).statusCode());
    int since = control("POST", "/reset", null).get("journal_seq").asInt();
    String key = control("POST", "/keys", Map.of("plan", Map.of("per_minute", 3))).get("key").asText();

    for (int call = 1; call <= 3; call++) assertEquals(200, listPets(key).statusCode());
    HttpResponse<String> refused = listPets(key);
    assertEquals(429, refused.statusCode());
    assertEquals("rate_limited", JSON.readTree(refused.body()).get("code").asText());
    int wait = Integer.parseInt(refused.headers().firstValue("Retry-After").orElseThrow());

    control("POST", "/clock", Map.of("advance_seconds", wait)); // not a sleep
    assertEquals(200, listPets(key).statusCode());

    JsonNode verified = control("POST", "/verify", Map.of("operation", "listPets", "key", key, "status", 200, "count", 4, "since", since));
    assertTrue(verified.get("ok").asBoolean(), verified.get("message").asText());
    JsonNode missed = control("POST", "/verify", Map.of("operation", "createPet", "key", key, "since", since));
    assertFalse(missed.get("ok").asBoolean());

    JsonNode report = control("GET", "/report?since=" + since, null);
    assertEquals(5, report.get("summary").get("requests").asInt());

    assertEquals("reset", control("POST", "/reset", null).get("status").asText());
    assertEquals(401, listPets(key).statusCode());
  }

  @AfterAll
  static void keepTheReport() throws Exception {
    // target/mockstore-report.{json,html}: the CI job uploads them as artifacts.
    Files.createDirectories(Path.of("target"));
    Files.writeString(Path.of("target/mockstore-report.json"), send("GET", "/__mockstore/report", null, null, Map.of()).body());
    Files.writeString(Path.of("target/mockstore-report.html"), send("GET", "/__mockstore/report.html", null, null, Map.of()).body());
  }
}
