// Differential oracle for kubelet-labeler's gunzip (src/node/facts/inflate.rs):
// reads each input the way NFD reads /proc/config.gz (source/kernel/kconfig.go:
// gzip.NewReader on an *os.File, then io.ReadAll; any error and NFD moves on to
// its next config path) and reports the bytes or the error.
// Built by tests/gunzip_go.rs (standard library only).
//
// stdin: records of a little-endian uint32 length and that many input bytes.
// stdout: for each record, one status byte (0: read to the end, 1: error), a
// little-endian uint32 length and that many bytes: the data or the error text.
package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"io"
	"os"
)

// readLikeNFD is kconfig.go's readKconfigGzip on an in-memory file. The
// reader is hidden behind a plain io.Reader: an *os.File is not an
// io.ByteReader, so gzip wraps it in a bufio.Reader, as it does for NFD.
func readLikeNFD(gz []byte) ([]byte, error) {
	f := struct{ io.Reader }{bytes.NewReader(gz)}
	r, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return io.ReadAll(r)
}

func main() {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	var n [4]byte
	for {
		if _, err := io.ReadFull(in, n[:]); err == io.EOF {
			return
		} else if err != nil {
			panic(err)
		}
		gz := make([]byte, binary.LittleEndian.Uint32(n[:]))
		if _, err := io.ReadFull(in, gz); err != nil {
			panic(err)
		}
		data, err := readLikeNFD(gz)
		status := byte(0)
		if err != nil {
			status, data = 1, []byte(err.Error())
		}
		binary.LittleEndian.PutUint32(n[:], uint32(len(data)))
		out.WriteByte(status)
		out.Write(n[:])
		out.Write(data)
	}
}
