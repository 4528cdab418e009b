package chtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Test users. The password-protected user is the one the tests connect as,
// so the credentials path of the store is exercised on every test.
const (
	User     = "gpuledger"
	Password = "gpuledger-test-secret"
)

// configXML is the smallest server config 18.16 and current releases both
// accept: the root element is <yandex> (current releases still read it),
// loopback only, no system log tables, small caches.
const configXML = `<?xml version="1.0"?>
<yandex>
  <logger>
    <level>information</level>
    <log>{{dir}}/server.log</log>
    <errorlog>{{dir}}/server.err.log</errorlog>
    <size>10M</size>
    <count>1</count>
  </logger>
  <listen_host>127.0.0.1</listen_host>
  <tcp_port>{{tcp}}</tcp_port>
  <http_port>{{http}}</http_port>
  <path>{{dir}}/data/</path>
  <tmp_path>{{dir}}/tmp/</tmp_path>
  <user_files_path>{{dir}}/user_files/</user_files_path>
  <format_schema_path>{{dir}}/format_schemas/</format_schema_path>
  <users_config>{{dir}}/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mark_cache_size>268435456</mark_cache_size>
  <uncompressed_cache_size>268435456</uncompressed_cache_size>
  <max_concurrent_queries>100</max_concurrent_queries>
</yandex>
`

const usersXML = `<?xml version="1.0"?>
<yandex>
  <profiles>
    <default>
      <max_memory_usage>4000000000</max_memory_usage>
    </default>
  </profiles>
  <users>
    <default>
      <password></password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </default>
    <{{user}}>
      <password>{{password}}</password>
      <networks><ip>127.0.0.1</ip><ip>::1</ip></networks>
      <profile>default</profile>
      <quota>default</quota>
    </{{user}}>
  </users>
  <quotas>
    <default>
      <interval>
        <duration>3600</duration>
        <queries>0</queries>
        <errors>0</errors>
        <result_rows>0</result_rows>
        <read_rows>0</read_rows>
        <execution_time>0</execution_time>
      </interval>
    </default>
  </quotas>
</yandex>
`

// writeConfig writes config.xml and users.xml into dir and returns the
// config path. extra is more server configuration (XML elements of the
// root), for cluster members.
func writeConfig(dir string, tcpPort, httpPort int, extra string) (string, error) {
	for _, sub := range []string{"data", "tmp", "user_files", "format_schemas"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return "", fmt.Errorf("cannot create %s: %w", sub, err)
		}
	}
	cfg := strings.NewReplacer("{{dir}}", dir, "{{tcp}}", fmt.Sprint(tcpPort), "{{http}}", fmt.Sprint(httpPort)).Replace(configXML)
	cfg = strings.Replace(cfg, "</yandex>", extra+"</yandex>", 1)
	users := strings.NewReplacer("{{user}}", User, "{{password}}", Password).Replace(usersXML)
	path := filepath.Join(dir, "config.xml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		return "", fmt.Errorf("cannot write server config: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "users.xml"), []byte(users), 0o644); err != nil {
		return "", fmt.Errorf("cannot write users config: %w", err)
	}
	return path, nil
}
