package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpuledger/gpuledger/internal/testenv"
)

// scrapeUser's password is scrapePassword; the hash was made once with
// bcrypt at its minimum cost, 4, to keep the test fast.
const (
	scrapeUser     = "prometheus"
	scrapePassword = "s3cret-scrape"
	scrapeHash     = "$2a$04$s2CdC.oZcX.CwchtB55oHOTETObrBxUWcAeceaNVJuPY6n/3egiw."
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key
// into dir and returns a pool that trusts it.
func selfSigned(t *testing.T, dir string) *x509.CertPool {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "gpuledger test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	write := func(name, typ string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: b}), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("cert.pem", "CERTIFICATE", der)
	write("key.pem", "EC PRIVATE KEY", keyDER)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return pool
}

func loopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// serve runs serveWithWebConfig until the test ends and waits until addr
// accepts connections.
func serve(t *testing.T, addr, webConfig string) <-chan error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "up 1\n") })
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- serveWithWebConfig(ctx, srv, addr, webConfig) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-errc:
			if err != nil {
				t.Errorf("serveWithWebConfig after cancel: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("serveWithWebConfig did not return after cancel")
		}
	})
	testenv.Eventually(t, 10*time.Second, func() error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return fmt.Errorf("nothing listens on %s: %w", addr, err)
		}
		return c.Close()
	})
	return errc
}

func get(t *testing.T, client *http.Client, url, user, password string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

func TestServeWithWebConfigTLSAndBasicAuth(t *testing.T) {
	dir := t.TempDir()
	pool := selfSigned(t, dir)
	// Relative paths are relative to the web config file.
	cfg := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(cfg, []byte("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  "+
		scrapeUser+": "+scrapeHash+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := loopbackAddr(t)
	serve(t, addr, cfg)

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + addr + "/metrics"
	for _, tc := range []struct {
		name, user, password string
		want                 int
	}{
		{"no credentials", "", "", http.StatusUnauthorized},
		{"wrong password", scrapeUser, "guess", http.StatusUnauthorized},
		{"unknown user", "mallory", scrapePassword, http.StatusUnauthorized},
		{"right credentials", scrapeUser, scrapePassword, http.StatusOK},
	} {
		code, body := get(t, client, url, tc.user, tc.password)
		if code != tc.want {
			t.Errorf("%s: status %d (%s), want %d", tc.name, code, body, tc.want)
		}
		if tc.want == http.StatusOK && body != "up 1\n" {
			t.Errorf("%s: body %q, want the handler's", tc.name, body)
		}
	}

	// Plain HTTP to the TLS port gets nothing.
	if code, body := get(t, &http.Client{Timeout: 5 * time.Second}, "http://"+addr+"/metrics", scrapeUser, scrapePassword); code == http.StatusOK {
		t.Errorf("plain HTTP was served: %d %q", code, body)
	}
	// A client that does not trust the certificate cannot connect.
	if code, _ := get(t, &http.Client{Timeout: 5 * time.Second}, url, scrapeUser, scrapePassword); code != 0 {
		t.Errorf("an untrusted certificate was accepted: status %d", code)
	}
}

func TestServeWithWebConfigPlainHTTP(t *testing.T) {
	addr := loopbackAddr(t)
	serve(t, addr, "")
	code, body := get(t, &http.Client{Timeout: 5 * time.Second}, "http://"+addr+"/metrics", "", "")
	if code != http.StatusOK || body != "up 1\n" {
		t.Errorf("status %d body %q, want 200 and the handler's", code, body)
	}
}

func TestServeWithWebConfigBadFile(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "web.yml")
	noCert := filepath.Join(dir, "nocert.yml")
	if err := os.WriteFile(noCert, []byte("tls_server_config:\n  cert_file: absent.pem\n  key_file: absent.key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badHash := filepath.Join(dir, "badhash.yml")
	if err := os.WriteFile(badHash, []byte("basic_auth_users:\n  alice: not-a-bcrypt-hash\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{missing, noCert, badHash} {
		srv := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Second}
		done := make(chan error, 1)
		go func() { done <- serveWithWebConfig(context.Background(), srv, loopbackAddr(t), path) }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("%s: err = %v, want an error naming the file", filepath.Base(path), err)
			}
		case <-time.After(10 * time.Second):
			_ = srv.Close()
			t.Errorf("%s: served with a bad web config", filepath.Base(path))
		}
	}
}

func TestServeWithWebConfigAddressInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	srv := &http.Server{Handler: http.NotFoundHandler(), ReadHeaderTimeout: time.Second}
	err = serveWithWebConfig(context.Background(), srv, l.Addr().String(), "")
	if err == nil || !strings.Contains(err.Error(), l.Addr().String()) {
		t.Errorf("err = %v, want an error naming %s", err, l.Addr())
	}
}
