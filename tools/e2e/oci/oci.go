// Package oci builds the small images the e2e suites' Pods run on a real node, from files held
// in memory, and pushes them to the environment's registry.
package oci

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/crane"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// StaticProgram reads the ELF program at path, which must ask for no dynamic loader: the
// images hold no libraries. An error opening the file is the *fs.PathError os.Open gives.
func StaticProgram(path string) ([]byte, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return nil, fmt.Errorf("%s is not a statically linked program", path)
		}
	}
	return os.ReadFile(path)
}

// File is one file of an image's layer: a folder (Name ends in /), a symbolic link to Link,
// or a regular file holding Data, owned by the user and group Owner (root when 0).
type File struct {
	Name  string
	Mode  int64
	Data  []byte
	Link  string
	Owner int
}

// Busybox is a static busybox's files: bin/busybox holding program and, for each applet (but
// busybox itself and names with a /), in the order given, a link bin/APPLET to it. The folders
// are the caller's.
func Busybox(program []byte, applets ...string) []File {
	files := []File{{Name: "bin/busybox", Mode: 0o755, Data: program}}
	for _, a := range applets {
		if a == "busybox" || strings.Contains(a, "/") {
			continue
		}
		files = append(files, File{Name: "bin/" + a, Link: "busybox"})
	}
	return files
}

// Image is one layer of files, in the order given (at a fixed time, so the same inputs always
// give the same digest), with config, for linux on this machine's architecture.
func Image(files []File, config v1.Config) (v1.Image, error) {
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	epoch := time.Unix(0, 0)
	for _, e := range files {
		h := &tar.Header{Name: e.Name, Mode: e.Mode, ModTime: epoch, Uid: e.Owner, Gid: e.Owner}
		switch {
		case e.Link != "":
			h.Typeflag, h.Linkname, h.Mode = tar.TypeSymlink, e.Link, 0o777
		case strings.HasSuffix(e.Name, "/"):
			h.Typeflag = tar.TypeDir
		default:
			h.Typeflag, h.Size = tar.TypeReg, int64(len(e.Data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(e.Data); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := layer.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		return nil, err
	}
	if img, err = mutate.Config(img, config); err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH
	return mutate.ConfigFile(img, cf)
}

// Push pushes img to ref over plain HTTP (the environment's registry is insecure).
func Push(img v1.Image, ref string) error {
	return crane.Push(img, ref, crane.Insecure)
}
