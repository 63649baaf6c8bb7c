// Stands in for runc's libcontainer/intelrdt (whose dependencies this
// offline build lacks): Root only, written from runc v1.5.0's behaviour,
// not its code. resctrl is /sys/fs/resctrl when that is a resctrl mount
// (statfs), an error when it does not exist, else the first resctrl mount
// in /proc/self/mountinfo.
package intelrdt

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

const rdtgroupSuperMagic = 0x7655821

func Root() (string, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs("/sys/fs/resctrl", &st); err != nil {
		return "", err
	}
	if st.Type == rdtgroupSuperMagic {
		return "/sys/fs/resctrl", nil
	}
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Split(line, " ")
		for i, x := range f {
			if x == "-" && i >= 6 && i+1 < len(f) && f[i+1] == "resctrl" {
				return unescape(f[4]), nil
			}
		}
	}
	return "", errors.New("resctrl: not found")
}

func unescape(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
