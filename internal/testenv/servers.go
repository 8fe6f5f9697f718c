package testenv

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// The throwaway servers of a test process: each is started at most once,
// by the first test that needs it, and stopped by a watchdog shell when
// the test process exits (so no TestMain is needed, and a killed test
// binary leaves nothing running). Every Postgres or S3 call gets its own
// database or bucket in them.
var (
	pgServer = &lazyServer{}
	s3Server = &lazyServer{}
	serial   atomic.Int64
)

type lazyServer struct {
	once sync.Once
	addr string // DSN prefix or endpoint
	err  error
}

func (l *lazyServer) get(start func() (string, error)) (string, error) {
	l.once.Do(func() { l.addr, l.err = start() })
	return l.addr, l.err
}

const (
	pgRole     = "cropkit"
	pgPassword = "cropkit"
	// S3AccessKey and S3SecretKey are the test S3 server's root
	// credentials; S3 also sets them as AWS_ACCESS_KEY_ID and
	// AWS_SECRET_ACCESS_KEY for the process.
	S3AccessKey = "cropkit-test"
	S3SecretKey = "cropkit-test-secret"
)

// Postgres returns the DSN of a new, empty database in a throwaway
// PostgreSQL cluster of this test process (initdb and pg_ctl, run as the
// postgres OS user through runuser when the tests run as root), listening
// on a loopback port. The role connecting owns the database and is not a
// superuser. Without PostgreSQL binaries the test is skipped, or fails
// under CI=true.
func Postgres(t testing.TB) string {
	t.Helper()
	base, err := pgServer.get(startPostgres)
	if err != nil {
		if errors.Is(err, errMissing) {
			missing(t, err.Error())
		}
		t.Fatalf("start postgres: %v", err)
	}
	name := fmt.Sprintf("t%d_%d", os.Getpid(), serial.Add(1))
	admin, err := sql.Open("pgx", base+"/postgres?sslmode=disable&user=postgres")
	if err != nil {
		t.Fatalf("postgres: %v", err)
	}
	defer admin.Close()
	if _, err := admin.Exec(`CREATE DATABASE ` + name + ` OWNER ` + pgRole); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	u, _ := url.Parse(base)
	u.User = url.UserPassword(pgRole, pgPassword)
	return u.String() + "/" + name + "?sslmode=disable"
}

var errMissing = errors.New("missing")

type missingError struct{ what string }

func (e *missingError) Error() string        { return e.what }
func (e *missingError) Is(target error) bool { return target == errMissing }

// pgBin finds a PostgreSQL server program on PATH or in Debian's versioned
// directory.
func pgBin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	matches, _ := filepath.Glob("/usr/lib/postgresql/*/bin/" + name)
	if len(matches) > 0 {
		return matches[len(matches)-1], nil
	}
	return "", &missingError{"PostgreSQL's " + name + " is not installed (apt-get install postgresql)"}
}

// asPostgres runs name with args as the postgres OS user when this process
// is root (initdb refuses root), else as this user.
func asPostgres(name string, args ...string) *exec.Cmd {
	if os.Geteuid() == 0 {
		return exec.Command("runuser", append([]string{"-u", "postgres", "--", name}, args...)...)
	}
	return exec.Command(name, args...)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// watchdog starts a shell that waits for this process to exit, then runs
// cleanup.
func watchdog(cleanup string) error {
	script := fmt.Sprintf(`while kill -0 %d 2>/dev/null; do sleep 1; done; %s`, os.Getpid(), cleanup)
	cmd := exec.Command("sh", "-c", script)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = nil, nil, nil
	cmd.SysProcAttr = detached()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start watchdog: %w", err)
	}
	go cmd.Wait()
	return nil
}

func startPostgres() (string, error) {
	initdb, err := pgBin("initdb")
	if err != nil {
		return "", err
	}
	pgctl, err := pgBin("pg_ctl")
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "cropkit-pg-")
	if err != nil {
		return "", err
	}
	if os.Geteuid() == 0 {
		pg, err := user.Lookup("postgres")
		if err != nil {
			return "", &missingError{"no postgres OS user to run the cluster as (initdb refuses root)"}
		}
		uid, _ := strconv.Atoi(pg.Uid)
		gid, _ := strconv.Atoi(pg.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			return "", err
		}
	}
	data := filepath.Join(dir, "data")
	if out, err := asPostgres(initdb, "-D", data, "-U", "postgres", "-A", "trust", "--no-sync", "-E", "UTF8", "--locale=C").CombinedOutput(); err != nil {
		return "", fmt.Errorf("initdb: %w: %s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return "", err
	}
	opts := fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300", port, dir)
	if out, err := asPostgres(pgctl, "-D", data, "-o", opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start").CombinedOutput(); err != nil {
		log, _ := os.ReadFile(filepath.Join(dir, "log"))
		return "", fmt.Errorf("pg_ctl start: %w: %s %s", err, out, log)
	}
	stop := strings.Join(asPostgres(pgctl, "-D", data, "-m", "immediate", "stop").Args, " ")
	if err := watchdog(stop + " >/dev/null 2>&1; rm -rf " + dir); err != nil {
		return "", err
	}
	base := fmt.Sprintf("postgres://127.0.0.1:%d", port)
	admin, err := sql.Open("pgx", base+"/postgres?sslmode=disable&user=postgres")
	if err != nil {
		return "", err
	}
	defer admin.Close()
	if _, err := admin.Exec(`CREATE ROLE ` + pgRole + ` LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE PASSWORD '` + pgPassword + `'`); err != nil {
		return "", fmt.Errorf("create role: %w", err)
	}
	return base, nil
}

// S3 returns the URL (s3://BUCKET?endpoint=…&region=…&use_path_style=true)
// of a new, empty bucket in a throwaway S3 server of this test process:
// versitygw with its POSIX backend on a loopback port (found on PATH or in
// $(go env GOPATH)/bin). Without it the test is skipped, or fails under
// CI=true.
func S3(t testing.TB) string {
	t.Helper()
	endpoint, err := s3Server.get(startS3)
	if err != nil {
		if errors.Is(err, errMissing) {
			missing(t, err.Error())
		}
		t.Fatalf("start S3 server: %v", err)
	}
	bucket := fmt.Sprintf("t%d-%d", os.Getpid(), serial.Add(1))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := s3.New(s3.Options{
		BaseEndpoint: aws.String(endpoint), Region: "us-east-1", UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(S3AccessKey, S3SecretKey, ""),
	})
	if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("create bucket %s: %v", bucket, err)
	}
	return "s3://" + bucket + "?endpoint=" + url.QueryEscape(endpoint) + "&region=us-east-1&use_path_style=true"
}

func versitygw() (string, error) {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p, nil
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		out, err := exec.Command("go", "env", "GOPATH").Output()
		if err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	return "", &missingError{"versitygw is not installed (go install github.com/versity/versitygw/cmd/versitygw@v1.8.0)"}
}

func startS3() (string, error) {
	bin, err := versitygw()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "cropkit-s3-")
	if err != nil {
		return "", err
	}
	for _, sub := range []string{"data", "meta"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			return "", err
		}
	}
	port, err := freePort()
	if err != nil {
		return "", err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	logf, err := os.Create(filepath.Join(dir, "log"))
	if err != nil {
		return "", err
	}
	defer logf.Close()
	cmd := exec.Command(bin, "--access", S3AccessKey, "--secret", S3SecretKey, "--port", addr,
		"posix", "--sidecar", filepath.Join(dir, "meta"), filepath.Join(dir, "data"))
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = detached()
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start versitygw: %w", err)
	}
	go cmd.Wait()
	if err := watchdog(fmt.Sprintf("kill %d; sleep 1; rm -rf %s", cmd.Process.Pid, dir)); err != nil {
		cmd.Process.Kill()
		return "", err
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			return "", fmt.Errorf("versitygw did not listen on %s: %s", addr, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The archive's object storage (gocloud.dev's s3blob) reads the usual
	// AWS environment variables.
	os.Setenv("AWS_ACCESS_KEY_ID", S3AccessKey)
	os.Setenv("AWS_SECRET_ACCESS_KEY", S3SecretKey)
	return "http://" + addr, nil
}
