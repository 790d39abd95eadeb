package tracing

import (
	"context"
	"testing"
)

func TestEnabled(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    bool
		wantErr bool
	}{
		{"nothing set: off", nil, false, false},
		{"endpoint: on", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, true, false},
		{"traces endpoint: on", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4318/v1/traces"}, true, false},
		{"exporter otlp: on", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, false},
		{"exporter none wins over an endpoint", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, false, false},
		{"SDK disabled wins", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_TRACES_EXPORTER": "otlp"}, false, false},
		{"unknown exporter", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Enabled(func(k string) string { return tc.env[k] })
			if got != tc.want || (err != nil) != tc.wantErr {
				t.Fatalf("Enabled = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		on      bool
		wantErr bool
	}{
		{"off", nil, false, false},
		{"http/protobuf by default", map[string]string{"OTEL_TRACES_EXPORTER": "otlp"}, true, false},
		{"grpc", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}, true, false},
		{"traces protocol overrides", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "carrier-pigeon", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"}, true, false},
		{"unknown protocol", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tp, shutdown, err := FromEnv(context.Background(), func(k string) string { return tc.env[k] }, "test")
			if (err != nil) != tc.wantErr || (tp != nil) != tc.on {
				t.Fatalf("FromEnv: provider %v, error %v; want on %v, error %v", tp, err, tc.on, tc.wantErr)
			}
			if err := shutdown(context.Background()); err != nil {
				t.Fatalf("shutdown: %v", err)
			}
		})
	}
}
