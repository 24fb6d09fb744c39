package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/nslab/nslab/deploy/kubernetes"
)

// defaultImage is the agents' image when none is given: the name a
// local build gets (make kube-image), which no registry serves. To run
// the agents on a cluster that pulls, push the image nslab-kube image
// wrote (crane push nslab-image.tar REGISTRY/nslab:TAG, or skopeo copy
// docker-archive:nslab-image.tar docker://REGISTRY/nslab:TAG) and give
// that reference to manifests -image.
func defaultImage() string { return "localhost/nslab:" + imageTag(version) }

// imageTag is version as an image tag can spell it ([A-Za-z0-9_.-],
// at most 128 characters).
func imageTag(v string) string {
	t := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			return r
		}
		return '-'
	}, v)
	return t[:min(len(t), 128)]
}

// runManifests prints every manifest of deploy/kubernetes with the
// agents' image.
func runManifests(args []string) error {
	fs := flag.NewFlagSet("manifests", flag.ContinueOnError)
	image := fs.String("image", defaultImage(), "the agents' image (a reference a node can pull, or one imported into its runtime)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 {
		return usageError{errors.New("manifests: takes only -image REF")}
	}
	out, err := kubernetes.Manifests(*image)
	if err != nil {
		return usageError{err}
	}
	_, err = os.Stdout.WriteString(out)
	return err
}

// addFlag is -add SRC=DEST, repeated: a file of this machine put in the
// image's top layer at DEST.
type addFlag [][2]string

func (a *addFlag) String() string { return fmt.Sprint(*a) }
func (a *addFlag) Set(v string) error {
	src, dst, ok := strings.Cut(v, "=")
	if !ok || src == "" || !path.IsAbs(dst) {
		return fmt.Errorf("-add %q: give SRC=/ABSOLUTE/DEST", v)
	}
	*a = append(*a, [2]string{src, dst})
	return nil
}

// runImage packs an image: a root file system (a tar, as mmdebstrap
// writes it) as its first layer and the files of -add as its second, so
// that a new nslab changes only the small layer. It writes a
// docker-archive tarball, which containerd (ctr images import), podman
// load, docker load and crane push all take.
func runImage(args []string) error {
	fs := flag.NewFlagSet("image", flag.ContinueOnError)
	root := fs.String("root", "", "the root file system, a tar (none: the image is the files of -add alone)")
	tag := fs.String("tag", defaultImage(), "the image's reference")
	out := fs.String("o", "", "the docker-archive tarball to write")
	var adds addFlag
	fs.Var(&adds, "add", "SRC=DEST: a file put in the image at DEST (repeat)")
	entry := fs.String("entrypoint", "", "the image's entrypoint, words separated by spaces")
	if err := fs.Parse(args); err != nil || *out == "" || fs.NArg() != 0 {
		return usageError{errors.New("image: give -o OUT.tar, and -root ROOT.tar, SRC=DEST, -tag REF, -entrypoint")}
	}
	ref, err := name.NewTag(*tag)
	if err != nil {
		return usageError{fmt.Errorf("image -tag %q: %w", *tag, err)}
	}
	var layers []v1.Layer
	if *root != "" {
		base, err := tarball.LayerFromFile(*root)
		if err != nil {
			return fmt.Errorf("image: the root %s: %w", *root, err)
		}
		layers = append(layers, base)
	}
	top, err := filesLayer(adds)
	if err != nil {
		return err
	}
	img, err := mutate.AppendLayers(empty.Image, append(layers, top)...)
	if err != nil {
		return err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", runtime.GOARCH // the binaries packed are built as nslab-kube is
	cf.Config.Env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	if *entry != "" {
		cf.Config.Entrypoint = strings.Fields(*entry)
	}
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return err
	}
	tmp := *out + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("image: write %s: %w", *out, err)
	}
	return os.Rename(tmp, *out)
}

// filesLayer is a layer of the files of adds, each at its destination
// with its mode, owned by root, and their directories.
func filesLayer(adds addFlag) (v1.Layer, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dirs := map[string]bool{}
	for _, a := range adds {
		data, err := os.ReadFile(a[0])
		if err != nil {
			return nil, fmt.Errorf("image -add: %w", err)
		}
		st, err := os.Stat(a[0])
		if err != nil {
			return nil, err
		}
		dst := strings.TrimPrefix(a[1], "/")
		var parents []string
		for d := path.Dir(dst); d != "." && !dirs[d]; d = path.Dir(d) {
			parents = append([]string{d}, parents...)
			dirs[d] = true
		}
		for _, d := range parents {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: time.Unix(0, 0)}); err != nil {
				return nil, err
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: dst, Mode: int64(st.Mode().Perm()), Size: int64(len(data)), ModTime: time.Unix(0, 0)}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	data := buf.Bytes()
	return tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
}
