package ns

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// A node's view of the system is a mount namespace and a UTS namespace of
// its own, made beside its network namespace and held the same way, by
// bind mounts of their nsfs files (DIR/NAME.mnt and DIR/NAME.uts), so
// that they outlive the process that made them. Inside a view:
//   - the hostname is the node's;
//   - /sys is a sysfs of the node's network namespace, mounted the first
//     time something runs in the view (see hideSys);
//   - /run (and /var/run where it is not a link to /run), /var/log and
//     /tmp are the view's own, directories of one tmpfs of its own;
//   - /etc is an overlay whose upper layer is the view's own: files written
//     there (the node's /etc/hosts, /etc/hostname, its files:) never reach
//     the host's /etc;
//   - /etc/netns/NAME/* is bound over /etc, as `ip netns exec` does.
//
// Everything else (/usr, /home, /var/lib, ...) is the host's, shared.
//
// A bind mount of a mount namespace file must sit on a mount that does
// not propagate (the kernel refuses a mount that would propagate a mount
// namespace into itself), so the directory of views is a mount of its own
// made private, as util-linux's unshare --mount=FILE asks: a tmpfs (see
// privateDir).

// View is an open node view: descriptors of its mount and UTS namespaces.
// The caller closes it.
type View struct {
	Name     string
	mnt, uts int
}

// Close releases the descriptors; the view stays.
func (v *View) Close() error {
	if v == nil || v.mnt < 0 {
		return nil
	}
	err := errors.Join(unix.Close(v.mnt), unix.Close(v.uts))
	v.mnt, v.uts = -1, -1
	return err
}

// ViewFile is a file written into a view (under one of its private
// directories, or under /etc, where it lands in the overlay).
type ViewFile struct {
	Path     string // absolute
	Data     []byte
	Mode     os.FileMode
	UID, GID int
}

// ViewDir is a directory made in a view, owned as given.
type ViewDir struct {
	Path     string
	Mode     os.FileMode
	UID, GID int
}

// ViewSetup is what a view holds besides its mounts.
type ViewSetup struct {
	Hostname string
	Dirs     []ViewDir  // made first, parents included
	Files    []ViewFile // then written, parents made 0755
	// Hidden are paths of the host's /etc the view does not show (the
	// overlay keeps a whiteout; the host's file is untouched).
	Hidden []string
	// Overlays are directories of Overlaid the view overlays as it does
	// /etc, for the node's files there (a web lab's /var/www): what the
	// node writes or changes there (chmod 755 /var/www) stays its own.
	Overlays []string
	// Shared are files of the host bound read-only into the view after
	// its files are written: one copy for every node (the lab's
	// /etc/hosts names every node: a copy per node would grow with the
	// square of the lab).
	Shared []ViewShared
}

// ViewShared is a host file (Source) that a view shows at Path, read-only.
type ViewShared struct {
	Path, Source string
}

// PrivateDirs are the directories a view mounts a tmpfs of its own on
// (besides /var/run, when it is a directory of its own), and Etc the one
// it overlays. /var/cache/bind is named's working directory: a node's
// DNS server (started for a service line) writes there, never in the
// host's. A directory this machine lacks is left out.
var PrivateDirs = []string{"/run", "/var/log", "/tmp", "/var/cache/bind"}

// OnlineCPUs is the number of CPUs /sys/devices/system/cpu/online names
// up to its highest (runtime.NumCPU when it cannot be read): the machine's,
// not this process's affinity.
func OnlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return runtime.NumCPU()
	}
	last := strings.TrimSpace(string(b))
	if i := strings.LastIndexAny(last, "-,"); i >= 0 {
		last = last[i+1:]
	}
	n, err := strconv.Atoi(last)
	if err != nil {
		return runtime.NumCPU()
	}
	return n + 1
}

// Etc is the directory a view overlays: writes there stay in the view.
const Etc = "/etc"

// Overlaid are the directories a view overlays, as it does /etc, when the
// node has files there (ViewSetup.Overlays) and this machine has the
// directory: the host's shows through, and the node's writes stay its own.
var Overlaid = []string{"/var/www"}

// ViewPaths returns the files that hold view name under dir.
func ViewPaths(dir, name string) (mnt, uts string) {
	return filepath.Join(dir, name+".mnt"), filepath.Join(dir, name+".uts")
}

// ViewMaker makes views from one locked thread. It starts from a base mount
// namespace of its own, a copy of this process's with nothing under the
// private directories (so that no view copies the lab's namespace mounts
// under /run/netns: each view is then as cheap as the host's own mounts,
// whatever the number of nodes), and for each view joins the base again,
// then the node's network namespace, and unshares. Close ends the thread,
// which is discarded.
type ViewMaker struct {
	reqs chan viewReq
	done chan struct{}
	err  error
}

type viewReq struct {
	net    *NS
	setup  ViewSetup
	shared []int // open_tree clones of setup.Shared's sources, in order
	cpu    int   // the CPU to make it on; -1: any
	reply  chan viewReply
}

type viewReply struct {
	mnt, uts int
	err      error
}

// NewViewMaker starts the maker's thread and makes its base.
func NewViewMaker() *ViewMaker {
	m := &ViewMaker{reqs: make(chan viewReq), done: make(chan struct{})}
	started := make(chan struct{})
	go m.loop(started)
	<-started
	return m
}

func (m *ViewMaker) loop(started chan struct{}) {
	runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
	defer close(m.done)
	base, err := makeBase()
	m.err = err
	close(started)
	if err == nil {
		defer unix.Close(base)
	}
	for r := range m.reqs {
		if m.err != nil {
			r.reply <- viewReply{-1, -1, m.err}
			continue
		}
		err := onCPU(r.cpu)
		mnt, uts := -1, -1
		if err == nil {
			mnt, uts, err = makeView(base, r.net, r.setup, r.shared)
		}
		r.reply <- viewReply{mnt, uts, err}
	}
}

// makeBase gives the calling thread the base mount namespace: a slave copy
// of this process's (mounts made on the host later still reach it, and
// none of its own go back), with the private directories' mounts and the
// host's /sys detached (see hideSys).
// It returns a descriptor of it.
func makeBase() (int, error) {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return -1, fmt.Errorf("base mount namespace for views: %w", err)
	}
	if err := unix.Mount("", "/", "none", unix.MS_SLAVE|unix.MS_REC, ""); err != nil {
		return -1, fmt.Errorf("base mount namespace for views: make / a slave: %w", err)
	}
	if err := detachUnder(privateDirs()); err != nil {
		return -1, err
	}
	if err := hideSys(); err != nil {
		return -1, err
	}
	fd, err := unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open the base mount namespace: %w", err)
	}
	return fd, nil
}

// privateDirs is the PrivateDirs this machine has (a view never creates a
// directory on the host), with /var/run when it is not a link.
func privateDirs() []string {
	var dirs []string
	for _, d := range append(append([]string(nil), PrivateDirs...), "/var/run") {
		if st, err := os.Lstat(d); err == nil && st.IsDir() {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// detachUnder lazily unmounts every mount at or under dirs in the calling
// thread's mount namespace, deepest first. A mount this thread cannot name
// is left: one under a directory its user may not enter (in a rootless
// lab's user namespace, another user's views under a 0700 directory:
// EACCES) or one a user namespace locked (EINVAL, EPERM), where the views
// cannot reach it either.
func detachUnder(dirs []string) error {
	text, err := os.ReadFile("/proc/thread-self/mountinfo")
	if err != nil {
		return fmt.Errorf("read the mounts: %w", err)
	}
	var points []string
	for _, e := range parseMountinfo(string(text)) {
		for _, d := range dirs {
			if e.point == d || strings.HasPrefix(e.point, d+"/") {
				points = append(points, e.point)
			}
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	for _, p := range points {
		if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) &&
			!errors.Is(err, unix.EACCES) && !errors.Is(err, unix.EPERM) {
			return fmt.Errorf("detach %s: %w", p, err)
		}
	}
	return nil
}

// onCPU pins the calling thread to cpu (-1: every online CPU).
func onCPU(cpu int) error {
	var set unix.CPUSet
	if cpu < 0 {
		for c := range runtime.NumCPU() * 4 {
			set.Set(c)
		}
	} else {
		set.Set(cpu)
	}
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return fmt.Errorf("run on CPU %d: %w", cpu, err)
	}
	return nil
}

// Make makes a view of net's node: it sets it up and returns its open
// namespaces, which Bind then holds under a name.
func (m *ViewMaker) Make(net *NS, setup ViewSetup) (*View, error) {
	return m.makeOn(net, setup, -1)
}

// MakeAndBind makes a view of net's node and holds it under dir (see
// Bind). The kernel refuses to bind a mount namespace that is older than
// the binder's (a loop check), and since Linux 6.18 it compares ids that
// are handed out in per-CPU batches, so a namespace made later on another
// CPU may have a smaller id than the binder's: the bind then fails with
// EINVAL. MakeAndBind makes the view again on each CPU in turn until the
// bind succeeds: on the CPU whose batch gave the binder's id, every later
// id is larger.
func (m *ViewMaker) MakeAndBind(dir string, net *NS, setup ViewSetup) error {
	cpus := []int{-1}
	for c := range OnlineCPUs() {
		cpus = append(cpus, c)
	}
	var err error
	for _, cpu := range cpus {
		var v *View
		if v, err = m.makeOn(net, setup, cpu); err != nil {
			return err
		}
		err = Bind(dir, v)
		v.Close()
		if !errors.Is(err, unix.EINVAL) {
			return err
		}
	}
	return err
}

func (m *ViewMaker) makeOn(net *NS, setup ViewSetup, cpu int) (*View, error) {
	shared, err := cloneShared(setup.Shared)
	defer func() {
		for _, fd := range shared {
			unix.Close(fd)
		}
	}()
	if err != nil {
		return nil, err
	}
	reply := make(chan viewReply, 1)
	m.reqs <- viewReq{net: net, setup: setup, shared: shared, cpu: cpu, reply: reply}
	r := <-reply
	if r.err != nil {
		return nil, fmt.Errorf("view of %s: %w", net.Name, r.err)
	}
	return &View{Name: net.Name, mnt: r.mnt, uts: r.uts}, nil
}

// Close ends the maker's thread, and its base with it.
func (m *ViewMaker) Close() {
	if m.reqs == nil {
		return
	}
	close(m.reqs)
	<-m.done
	m.reqs = nil
}

// makeView runs on the maker's thread: from base, into net, a new mount
// and UTS namespace set up as the package doc says. It returns their
// descriptors; the thread goes back to base afterwards.
//
// Equivalent to: nsenter --net=NETNS unshare --mount --uts --propagation slave sh -c
// 'mount -t tmpfs ...; mount -t overlay ...; mount --bind ...; hostname NAME; ...'
func makeView(base int, net *NS, setup ViewSetup, shared []int) (mnt, uts int, err error) {
	if err := unix.Setns(base, unix.CLONE_NEWNS); err != nil {
		return -1, -1, fmt.Errorf("join the base mount namespace: %w", err)
	}
	if err := unix.Setns(net.fd, unix.CLONE_NEWNET); err != nil {
		return -1, -1, fmt.Errorf("enter namespace %s: %w", net.Name, err)
	}
	if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_NEWUTS); err != nil {
		return -1, -1, fmt.Errorf("unshare mount and UTS namespaces: %w", err)
	}
	steps := []func() error{
		func() error { return ownDirs(setup.Overlays) },
		func() error { return writeView(setup) },
		func() error { return attachShared(setup.Shared, shared) },
		func() error { return bindEtc(net.Name) },
		func() error { return unix.Sethostname([]byte(setup.Hostname)) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return -1, -1, err
		}
	}
	if mnt, err = unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		return -1, -1, fmt.Errorf("open the view's mount namespace: %w", err)
	}
	if uts, err = unix.Open("/proc/thread-self/ns/uts", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		unix.Close(mnt)
		return -1, -1, fmt.Errorf("open the view's UTS namespace: %w", err)
	}
	return mnt, uts, nil
}

// hideSys detaches the host's sysfs from the base's /sys, and so from
// every view's (it shows the host's network namespace): once, since an
// unmount in each view waited for an RCU grace period per view. The
// node's own is mounted the first time something runs in the view
// (ensureSys). Not at once: mounting a sysfs
// compares it with every sysfs superblock of the machine (one per network
// namespace that has one mounted), so a sysfs per view made deploy
// quadratic (kernfs_test_super took 8.7% of a 10,000-node deploy).
//
// Equivalent to: umount -l /sys
func hideSys() error {
	if err := unix.Unmount("/sys", unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("unmount /sys: %w", err)
	}
	return nil
}

// ensureSys mounts the node's sysfs on the view's /sys unless it is there
// already, on a thread in the view and in the node's network namespace.
// The mount stays in the view for every later process.
//
// Equivalent to: mountpoint -q /sys || mount -t sysfs sysfs /sys
func ensureSys() error {
	var sfs unix.Statfs_t
	if err := unix.Statfs("/sys", &sfs); err == nil && sfs.Type == unix.SYSFS_MAGIC {
		return nil
	}
	return remountSys()
}

// viewTmpfs is the staging point of a view's one tmpfs: its directories
// are the overlay's upper and work layers and the private directories,
// each bound in place; the view's own /run bound over it last hides it.
const viewTmpfs = "/run"

// ownDirs gives the view a tmpfs of its own, and from it an overlay on
// /etc whose upper layer is the view's (the host's /etc shows through,
// and what the view writes stays in it), one on each of overlays (of
// Overlaid) the machine has, and each private directory (/run, /var/run
// where it is no link, /var/log, /tmp). One tmpfs, not one per
// directory: a tmpfs's superblock is most of what making a view and
// ending it cost.
//
// Equivalent to: mount -t tmpfs -o mode=0700 nslab-view /run;
// mkdir /run/upper /run/work /run/dirs/{run,var_log,tmp};
// mount -t overlay -o lowerdir=/etc,upperdir=/run/upper,workdir=/run/work nslab-etc /etc;
// mount --bind /run/dirs/var_log /var/log; ...; mount --bind /run/dirs/run /run
func ownDirs(overlays []string) error {
	if err := unix.Mount("nslab-view", viewTmpfs, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0700"); err != nil {
		return fmt.Errorf("the view's tmpfs: %w", err)
	}
	dirs := privateDirs()
	layers := []string{"upper", "work", "dirs"}
	overlays = overlaidDirs(overlays)
	for _, d := range overlays {
		layers = append(layers, layer("upper", d), layer("work", d))
	}
	for _, d := range append(layers, dirs...) {
		mode := os.FileMode(0o755)
		if d == "/tmp" {
			mode = 0o1777
		}
		p := ownDir(d)
		if err := os.Mkdir(p, mode); err != nil {
			return fmt.Errorf("make %s in the view's tmpfs: %w", p, err)
		}
		if err := os.Chmod(p, mode); err != nil { // past the umask
			return fmt.Errorf("chmod %s: %w", p, err)
		}
	}
	opts := "lowerdir=" + Etc + ",upperdir=" + ownDir("upper") + ",workdir=" + ownDir("work")
	if err := unix.Mount("nslab-etc", Etc, "overlay", 0, opts); err != nil {
		return fmt.Errorf("overlay on %s (CONFIG_OVERLAY_FS): %w", Etc, err)
	}
	for _, d := range overlays {
		opts := "lowerdir=" + d + ",upperdir=" + ownDir(layer("upper", d)) + ",workdir=" + ownDir(layer("work", d))
		if err := unix.Mount("nslab-overlay", d, "overlay", 0, opts); err != nil {
			return fmt.Errorf("overlay on %s: %w", d, err)
		}
	}
	// /run last: bound over the staging point, it hides the rest.
	for _, d := range append(slices.DeleteFunc(dirs, func(d string) bool { return d == viewTmpfs }), viewTmpfs) {
		if err := unix.Mount(ownDir(d), d, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("bind the view's %s: %w", d, err)
		}
	}
	return nil
}

// overlaidDirs are those of dirs that are of Overlaid and that this
// machine has, as directories.
func overlaidDirs(dirs []string) []string {
	var out []string
	for _, d := range dirs {
		if st, err := os.Lstat(d); err == nil && st.IsDir() && slices.Contains(Overlaid, d) && !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// layer names the overlay layer kind (upper, work) of overlaid directory
// d in the view's tmpfs: "upper_var_www".
func layer(kind, d string) string {
	return kind + "_" + strings.ReplaceAll(strings.TrimPrefix(d, "/"), "/", "_")
}

// ownDir is where the view's tmpfs keeps d: "upper" and "work" (the
// overlay's layers) at its root, a private directory under dirs/.
func ownDir(d string) string {
	if !strings.HasPrefix(d, "/") {
		return filepath.Join(viewTmpfs, d)
	}
	return filepath.Join(viewTmpfs, "dirs", strings.ReplaceAll(strings.TrimPrefix(d, "/"), "/", "_"))
}

// writeView makes setup's directories and writes its files, on the
// calling thread (inside the view). Each must be in a directory the view
// has of its own: a machine without /var/log (say) gives its nodes none,
// and a file there would land on the host's file system.
func writeView(setup ViewSetup) error {
	for _, p := range viewPaths(setup) {
		if err := ownPath(p, setup.Overlays); err != nil {
			return err
		}
	}
	for _, d := range setup.Dirs {
		if err := os.MkdirAll(d.Path, 0o755); err != nil {
			return fmt.Errorf("make %s: %w", d.Path, err)
		}
		if err := os.Chmod(d.Path, d.Mode); err != nil {
			return fmt.Errorf("chmod %s: %w", d.Path, err)
		}
		if err := os.Lchown(d.Path, d.UID, d.GID); err != nil {
			return fmt.Errorf("chown %s: %w", d.Path, err)
		}
	}
	for _, f := range setup.Files {
		if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
			return fmt.Errorf("make %s: %w", filepath.Dir(f.Path), err)
		}
		// A link there (the host's, seen through the overlay) is replaced,
		// never followed out of the view.
		if err := os.Remove(f.Path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("replace %s: %w", f.Path, err)
		}
		if err := os.WriteFile(f.Path, f.Data, f.Mode); err != nil {
			return fmt.Errorf("write %s: %w", f.Path, err)
		}
		if err := os.Chmod(f.Path, f.Mode); err != nil {
			return fmt.Errorf("chmod %s: %w", f.Path, err)
		}
		if err := os.Lchown(f.Path, f.UID, f.GID); err != nil {
			return fmt.Errorf("chown %s: %w", f.Path, err)
		}
	}
	for _, p := range setup.Hidden {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("hide %s: %w", p, err)
		}
	}
	return nil
}

// Bind holds view v under dir as v.Name (see ViewPaths), mounting in dir's
// mount home so that it outlives this process. dir's parent (the
// directory of every lab's views) is made a private mount first. The
// mount point files are created exclusively: a name that is taken fails
// with ErrExists.
//
// Equivalent to: mount --bind /proc/PID/ns/mnt DIR/NAME.mnt (and .uts)
func Bind(dir string, v *View) error {
	return inMountHome(dir, func() error {
		if err := labDir(dir); err != nil {
			return err
		}
		mnt, uts := ViewPaths(dir, v.Name)
		for _, b := range []struct {
			fd   int
			path string
		}{{v.mnt, mnt}, {v.uts, uts}} {
			f, err := unix.Open(b.path, unix.O_RDONLY|unix.O_CREAT|unix.O_EXCL|unix.O_CLOEXEC, 0o444)
			if err != nil {
				if errors.Is(err, unix.EEXIST) {
					return fmt.Errorf("hold view %s: %s: %w", v.Name, b.path, ErrExists)
				}
				return fmt.Errorf("hold view %s: %w", v.Name, err)
			}
			unix.Close(f)
			src := "/proc/self/fd/" + strconv.Itoa(b.fd)
			if err := unix.Mount(src, b.path, "none", unix.MS_BIND, ""); err != nil {
				_ = os.Remove(b.path) // the empty mount point; the error is the one to report
				return fmt.Errorf("hold view %s: bind mount on %s: %w", v.Name, b.path, err)
			}
		}
		return nil
	})
}

// privateDir makes dir (created 0755 if missing) a private mount: a
// tmpfs of its own when it is not a mount point yet. The views' mount
// points are files created by the thousand and removed with their lab:
// on a disk file system each would be a new inode, and ext4 skips the
// inodes deleted in the last minutes on every allocation, so a deploy
// after a destroy paid per view for every view the destroy removed
// (measured: 40% of a 1,000-node deploy's time, in recently_deleted and
// find_inode_bit, on this machine whose /run is on ext4).
//
// Equivalent to: mount --make-private DIR || { mount -t tmpfs -o mode=0755,nosuid,nodev,noexec nslab-views DIR; mount --make-private DIR; }
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	for mounted := false; ; mounted = true {
		err := unix.Mount("", dir, "none", unix.MS_PRIVATE, "")
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINVAL) || mounted {
			return fmt.Errorf("make %s a private mount: %w", dir, err)
		}
		if err := unix.Mount("nslab-views", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755"); err != nil {
			return fmt.Errorf("mount a tmpfs on %s: %w", dir, err)
		}
	}
}

// OpenView opens view name held under dir, from dir's mount home (where
// Bind holds it). It returns an error wrapping os.ErrNotExist when dir
// holds no view of that name.
func OpenView(dir, name string) (*View, error) {
	if _, err := pathOf(dir, name); err != nil {
		return nil, err
	}
	var v *View
	open := func() error {
		mntPath, utsPath := ViewPaths(dir, name)
		mnt, err := openNS(mntPath)
		if err != nil {
			return fmt.Errorf("open the view of %s: %w", name, err)
		}
		uts, err := openNS(utsPath)
		if err != nil {
			unix.Close(mnt)
			return fmt.Errorf("open the view of %s: %w", name, err)
		}
		v = &View{Name: name, mnt: mnt, uts: uts}
		return nil
	}
	// Where no home is found (a slave mount without its master), the
	// views this process sees are the ones it can open.
	if fd, err := mountHome(dir); err == nil && fd >= 0 {
		return v, inMountHome(dir, open)
	}
	return v, open()
}

// openNS opens a namespace file, and refuses anything that is not one.
func openNS(p string) (int, error) {
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return -1, fmt.Errorf("%s: %w", p, os.ErrNotExist)
		}
		return -1, err
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(fd, &sfs); err != nil || sfs.Type != unix.NSFS_MAGIC {
		unix.Close(fd)
		return -1, fmt.Errorf("%s: %w", p, ErrNotNamespace)
	}
	return fd, nil
}

// RemoveViews unmounts and unlinks every view held under dir (a lab's
// directory of views) and removes dir; then, when parent (the directory
// of every lab's views) holds nothing more, unmounts it (a tmpfs, or the
// bind mount of itself an earlier nslab made) and removes it. What is missing is success, so it can be re-run; it
// undoes what a maker killed at any point left (an empty mount point).
//
// Equivalent to: umount -l DIR/*; rm -r DIR; [ -z "$(ls PARENT)" ] && umount PARENT && rmdir PARENT
func RemoveViews(parent, dir string) error {
	return inMountHome(parent, func() error {
		preparedDirs.Delete(dir)
		if mountPoint(dir) {
			// One detach takes every view under it, in one RCU grace
			// period instead of one per view.
			if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
				return fmt.Errorf("unmount the views in %s: %w", dir, err)
			}
		}
		ents, err := os.ReadDir(dir)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("list views in %s: %w", dir, err)
		}
		for _, e := range ents {
			p := filepath.Join(dir, e.Name())
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("unmount view %s: %w", p, err)
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove view %s: %w", p, err)
			}
		}
		if err := os.Remove(dir); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", dir, err)
		}
		left, err := os.ReadDir(parent)
		if err != nil || len(left) > 0 {
			return nil // missing, or other labs' views are there
		}
		if err := unix.Unmount(parent, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("unmount %s: %w", parent, err)
		}
		if err := os.Remove(parent); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove %s: %w", parent, err)
		}
		return nil
	})
}

// enterView joins v's mount and UTS namespaces on the calling locked
// thread, which then has a file system context of its own (it must never
// be unlocked), and keeps the working directory where it exists there.
func enterView(v *View) error {
	cwd, _ := os.Getwd()
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("unshare the file system context: %w", err)
	}
	if err := unix.Setns(v.mnt, unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("enter the mount namespace of %s: %w", v.Name, err)
	}
	if err := unix.Setns(v.uts, unix.CLONE_NEWUTS); err != nil {
		return fmt.Errorf("enter the UTS namespace of %s: %w", v.Name, err)
	}
	if cwd == "" || unix.Chdir(cwd) != nil {
		_ = unix.Chdir("/") // best effort, as ip netns exec
	}
	return nil
}

// viewPaths are the paths setup writes.
func viewPaths(setup ViewSetup) []string {
	var out []string
	for _, d := range setup.Dirs {
		out = append(out, d.Path)
	}
	for _, f := range setup.Files {
		out = append(out, f.Path)
	}
	return append(out, setup.Hidden...)
}

// ownPath says why p is not in a directory of the calling thread's view
// (an overlaid /etc, or a tmpfs the view mounted), or nil. /var/run as a
// link to /run is /run's.
func ownPath(p string, overlays []string) error {
	roots := append(append([]string{Etc}, overlaidDirs(overlays)...), privateDirs()...)
	if st, err := os.Lstat("/var/run"); err == nil && st.Mode()&os.ModeSymlink != 0 {
		if target, err := os.Readlink("/var/run"); err == nil && (target == "/run" || target == "../run") {
			roots = append(roots, "/var/run")
		}
	}
	for _, r := range roots {
		if strings.HasPrefix(p, r+"/") {
			return nil
		}
	}
	for _, r := range append(append(PrivateDirs, "/var/run", Etc), Overlaid...) {
		if strings.HasPrefix(p, r+"/") {
			return fmt.Errorf("%s: this machine has no %s, so the node has none of its own, and the file would land on the host's file system: put it under another of %s", p, r, strings.Join(roots, ", "))
		}
	}
	return fmt.Errorf("%s is not in a directory of the node's own", p)
}

// cloneShared makes a detached copy of each shared file's mount, on the
// calling thread (in nslab's mount namespace, where the sources are):
// the view's thread, in a namespace that does not see them, attaches the
// copies. The caller closes the descriptors.
//
// Equivalent to: open_tree(AT_FDCWD, SOURCE, OPEN_TREE_CLONE)
func cloneShared(shared []ViewShared) ([]int, error) {
	var fds []int
	for _, s := range shared {
		fd, err := unix.OpenTree(unix.AT_FDCWD, s.Source, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
		if err != nil {
			for _, f := range fds {
				unix.Close(f)
			}
			return nil, fmt.Errorf("clone %s for %s: %w", s.Source, s.Path, err)
		}
		fds = append(fds, fd)
	}
	return fds, nil
}

// attachShared mounts each cloned file at its path in the view, read-only
// (the file there, written or the host's, is made first when missing).
//
// Equivalent to: mount --bind -o ro SOURCE PATH (from outside the view)
func attachShared(shared []ViewShared, fds []int) error {
	for i, s := range shared {
		if _, err := os.Stat(s.Path); os.IsNotExist(err) {
			if err := os.WriteFile(s.Path, nil, 0o644); err != nil {
				return fmt.Errorf("make %s: %w", s.Path, err)
			}
		}
		if err := unix.MoveMount(fds[i], "", unix.AT_FDCWD, s.Path, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			return fmt.Errorf("attach %s at %s: %w", s.Source, s.Path, err)
		}
		if err := unix.Mount("", s.Path, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			return fmt.Errorf("make %s read-only: %w", s.Path, err)
		}
	}
	return nil
}

// RemoveView unmounts and removes the view of namespace name (its .mnt
// and .uts files) in dir, under parent as RemoveViews has them; a view
// that is gone counts as removed.
func RemoveView(parent, dir, name string) error {
	return inMountHome(parent, func() error {
		mnt, uts := ViewPaths(dir, name)
		for _, p := range []string{mnt, uts} {
			if err := unix.Unmount(p, unix.MNT_DETACH); err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("unmount view %s: %w", p, err)
			}
			if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("remove view %s: %w", p, err)
			}
		}
		return nil
	})
}

// Do runs fn in view v (its mounts and hostname; the caller's network
// namespace) on a thread of its own, discarded after: for writing a file
// of the node's own tree.
func (v *View) Do(fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		if err := enterView(v); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	return <-errc
}

// preparedDirs are the labs' view directories labDir made ready in this
// process.
var preparedDirs sync.Map

// labDir makes dir, a lab's directory of views, ready to hold them: under
// the views' private directory, and a tmpfs of its own, so that
// RemoveViews detaches all of a lab's views at once (a lazy unmount takes
// a mount's whole subtree). Once per directory and process: a mount
// operation per view would cost as much again.
//
// Equivalent to: mkdir -p DIR && mount -t tmpfs -o mode=0755,nosuid,nodev,noexec nslab-lab DIR
func labDir(dir string) error {
	if _, ok := preparedDirs.Load(dir); ok {
		return nil
	}
	if err := privateDir(filepath.Dir(dir)); err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	if !mountPoint(dir) {
		if err := unix.Mount("nslab-lab", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0755"); err != nil {
			return fmt.Errorf("mount a tmpfs on %s: %w", dir, err)
		}
	}
	preparedDirs.Store(dir, struct{}{})
	return nil
}

// mountPoint reports whether dir is a mount point: on another device than
// its parent.
func mountPoint(dir string) bool {
	var a, b unix.Stat_t
	if unix.Stat(dir, &a) != nil || unix.Stat(filepath.Dir(dir), &b) != nil {
		return false
	}
	return a.Dev != b.Dev
}
