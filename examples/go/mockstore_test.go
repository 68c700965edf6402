// A Go team's suite against mockstore, with the standard library only: the service
// container's /health waited for, a scenario loaded by name, a key issued and exhausted,
// the 429 read, the scenario clock advanced instead of sleeping, the retry, the calls
// verified, the report written for CI to keep, the mock reset. MOCKSTORE_URL is the
// server's root; MOCKSTORE_REPORT_DIR where the report goes (default: reports).
//
// The request and answer shapes are the control API's OpenAPI document's
// (/__mockstore/control.openapi.json); a project that can fetch oapi-codegen generates
// them from it instead of writing the few it needs, as here.
package mockstoretest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Key is the control API's Key (the fields this suite reads).
type Key struct {
	Key    string `json:"key"`
	Plan   string `json:"plan"`
	Minute struct {
		Used      int `json:"used"`
		Remaining int `json:"remaining"`
	} `json:"minute"`
}

// Error is every refusal's body, the API's and the control API's.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Status  int    `json:"status"`
}

type Verification struct {
	Ok      bool   `json:"ok"`
	Count   int    `json:"count"`
	Message string `json:"message"`
}

type Reset struct {
	Status     string `json:"status"`
	Scenario   string `json:"scenario"`
	JournalSeq int    `json:"journal_seq"`
}

type Report struct {
	Summary struct {
		Requests int            `json:"requests"`
		Findings map[string]int `json:"findings"`
	} `json:"summary"`
	Coverage struct {
		Operations []struct {
			Operation string `json:"operation"`
			Responses []struct {
				Status int `json:"status"`
				Met    int `json:"met"`
			} `json:"responses"`
		} `json:"operations"`
	} `json:"coverage"`
}

// Mock is a client of one mockstore server: its control API and its Pet Store API.
type Mock struct {
	Root   string
	client *http.Client
}

func newMock(t *testing.T) *Mock {
	root := strings.TrimRight(os.Getenv("MOCKSTORE_URL"), "/")
	if root == "" {
		root = "http://127.0.0.1:8080"
	}
	m := &Mock{Root: root, client: &http.Client{Timeout: 10 * time.Second}}
	m.waitForHealth(t, 30*time.Second)
	return m
}

// waitForHealth polls /__mockstore/health until the service answers 200, as a CI job
// waits for its service container.
func (m *Mock) waitForHealth(t *testing.T, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		response, err := m.client.Get(m.Root + "/__mockstore/health")
		if err == nil {
			response.Body.Close()
			if response.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("mockstore at %s never became healthy: %v", m.Root, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// call sends one request and decodes a JSON answer into out (when out is not nil).
func (m *Mock) call(t *testing.T, method, path, contentType string, body []byte, header http.Header, out any) *http.Response {
	t.Helper()
	request, err := http.NewRequest(method, m.Root+path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for name, values := range header {
		request.Header[name] = values
	}
	if contentType != "" {
		request.Header.Set("Content-Type", contentType)
	}
	// Tools name themselves: mockstore refuses body-less POSTs a web page could send.
	request.Header.Set("X-Mockstore-Client", "go-recipe")
	response, err := m.client.Do(request)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer response.Body.Close()
	raw, err := io.ReadAll(response.Body)
	if err != nil {
		t.Fatal(err)
	}
	if out != nil && len(raw) > 0 {
		if err := json.Unmarshal(raw, out); err != nil {
			t.Fatalf("%s %s: %d %q is not the JSON expected: %v", method, path, response.StatusCode, raw, err)
		}
	}
	return response
}

// control calls the control API with a JSON body (nil: none).
func (m *Mock) control(t *testing.T, method, path string, body any, out any) *http.Response {
	t.Helper()
	var raw []byte
	contentType := ""
	if body != nil {
		encoded, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		raw, contentType = encoded, "application/json"
	}
	return m.call(t, method, "/__mockstore"+path, contentType, raw, nil, out)
}

func (m *Mock) api(t *testing.T, path, key string, out any) *http.Response {
	t.Helper()
	return m.call(t, "GET", "/v1"+path, "", nil, http.Header{"Authorization": {"Bearer " + key}}, out)
}

func TestAKeyOfThreeAMinuteWaitsForTheClock(t *testing.T) {
	m := newMock(t)

	// A bundled scenario, by name.
	if r := m.call(t, "PUT", "/__mockstore/scenario", "text/plain", []byte("default"), nil, nil); r.StatusCode != 200 {
		t.Fatalf("loading the default scenario: %d", r.StatusCode)
	}
	var reset Reset
	m.control(t, "POST", "/reset", nil, &reset)
	if reset.Status != "reset" {
		t.Fatalf("reset: %+v", reset)
	}

	var key Key
	if r := m.control(t, "POST", "/keys", map[string]any{"plan": map[string]int{"per_minute": 3}}, &key); r.StatusCode != 201 {
		t.Fatalf("issuing a key: %d", r.StatusCode)
	}
	for call := 1; call <= 3; call++ {
		var pets []map[string]any
		r := m.api(t, "/pets?limit=2", key.Key, &pets)
		if r.StatusCode != 200 || len(pets) > 2 {
			t.Fatalf("call %d: %d, %d pets", call, r.StatusCode, len(pets))
		}
		if remaining := r.Header.Get("X-RateLimit-Remaining"); remaining != strconv.Itoa(3-call) {
			t.Fatalf("call %d: X-RateLimit-Remaining %q", call, remaining)
		}
	}
	var refused Error
	r := m.api(t, "/pets", key.Key, &refused)
	if r.StatusCode != 429 || refused.Code != "rate_limited" || refused.Status != 429 {
		t.Fatalf("the fourth call: %d %+v", r.StatusCode, refused)
	}
	wait, err := strconv.Atoi(r.Header.Get("Retry-After"))
	if err != nil || wait <= 0 || wait > 60 {
		t.Fatalf("Retry-After %q", r.Header.Get("Retry-After"))
	}

	// The scenario clock, not a sleep.
	m.control(t, "POST", "/clock", map[string]int{"advance_seconds": wait}, nil)
	if r := m.api(t, "/pets", key.Key, nil); r.StatusCode != 200 {
		t.Fatalf("the retry after the wait: %d", r.StatusCode)
	}

	var verified Verification
	m.control(t, "POST", "/verify", map[string]any{
		"operation": "listPets", "key": key.Key, "status": 200, "count": 4, "since": reset.JournalSeq,
	}, &verified)
	if !verified.Ok {
		t.Fatalf("verify: %s", verified.Message)
	}
	var missed Verification
	m.control(t, "POST", "/verify", map[string]any{"operation": "createPet", "key": key.Key, "since": reset.JournalSeq}, &missed)
	if missed.Ok || !strings.Contains(missed.Message, "createPet") {
		t.Fatalf("a createPet that never came: %+v", missed)
	}

	// The report: kept where CI uploads its artifacts from.
	var report Report
	m.control(t, "GET", fmt.Sprintf("/report?since=%d", reset.JournalSeq), nil, &report)
	throttled := 0
	for _, operation := range report.Coverage.Operations {
		for _, answer := range operation.Responses {
			if operation.Operation == "listPets" && answer.Status == 429 {
				throttled = answer.Met
			}
		}
	}
	if report.Summary.Requests != 5 || throttled != 1 {
		t.Fatalf("report: %d requests, %d 429s", report.Summary.Requests, throttled)
	}
	writeReport(t, m)

	m.control(t, "POST", "/reset", nil, &reset)
	if r := m.api(t, "/pets", key.Key, nil); r.StatusCode != 401 {
		t.Fatalf("a key issued before the reset: %d", r.StatusCode)
	}
}

func TestTheControlAPIRefusesWithErrorBodies(t *testing.T) {
	m := newMock(t)
	var refused Error
	if r := m.control(t, "POST", "/clock", map[string]string{"set": "9999-01-01T00:00:00Z"}, &refused); r.StatusCode != 400 {
		t.Fatalf("a clock out of range: %d", r.StatusCode)
	}
	if refused.Code != "invalid_request" || refused.Status != 400 {
		t.Fatalf("%+v", refused)
	}
	var unknown Error
	m.control(t, "DELETE", "/keys/no-such-key", nil, &unknown)
	if unknown.Code != "unknown_key" {
		t.Fatalf("%+v", unknown)
	}
}

// writeReport keeps the JSON and HTML reports under MOCKSTORE_REPORT_DIR.
func writeReport(t *testing.T, m *Mock) {
	t.Helper()
	dir := os.Getenv("MOCKSTORE_REPORT_DIR")
	if dir == "" {
		dir = "reports"
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, path := range map[string]string{"mockstore-report.json": "/report", "mockstore-report.html": "/report.html"} {
		response, err := m.client.Get(m.Root + "/__mockstore" + path)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(response.Body)
		response.Body.Close()
		if err != nil || response.StatusCode != 200 {
			t.Fatalf("%s: %d %v", path, response.StatusCode, err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
