// Differential oracle for kubelet-labeler's gunzip (src/node/facts/inflate.rs):
// reads each input the way NFD reads /proc/config.gz (source/kernel/kconfig.go:
// gzip.NewReader on an *os.File, then io.ReadAll; any error and NFD moves on to
// its next config path) and reports the bytes or the error. A second kind of
// input is a bare DEFLATE stream, read with compress/flate: the test wraps
// what Go makes of a mutated stream in a gzip member with the right trailer.
// Built by tests/gunzip_go.rs (standard library only).
//
// stdin: records of a kind byte (0: gzip, 1: DEFLATE), a little-endian uint32
// length and that many input bytes.
// stdout: for each record, a status byte (0: read to the end, 1: error), a
// little-endian uint32 length and that many bytes: for gzip, the data or the
// error text; for DEFLATE, a little-endian uint32 count of the input bytes
// the stream took and the data (on an error, the data before it).
package main

import (
	"bufio"
	"bytes"
	"compress/flate"
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

// inflate reads one DEFLATE stream from a bytes.Reader (an io.ByteReader,
// so flate reads no byte past the stream's end): the bytes taken, the data.
func inflate(stream []byte) (uint32, []byte, error) {
	in := bytes.NewReader(stream)
	data, err := io.ReadAll(flate.NewReader(in))
	return uint32(len(stream) - in.Len()), data, err
}

func main() {
	in := bufio.NewReader(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	var head [5]byte
	for {
		if _, err := io.ReadFull(in, head[:]); err == io.EOF {
			return
		} else if err != nil {
			panic(err)
		}
		input := make([]byte, binary.LittleEndian.Uint32(head[1:]))
		if _, err := io.ReadFull(in, input); err != nil {
			panic(err)
		}
		var data []byte
		var err error
		if head[0] == 0 {
			data, err = readLikeNFD(input)
			if err != nil {
				data = []byte(err.Error())
			}
		} else {
			var took uint32
			took, data, err = inflate(input)
			data = append(binary.LittleEndian.AppendUint32(nil, took), data...)
		}
		status := byte(0)
		if err != nil {
			status = 1
		}
		var n [4]byte
		binary.LittleEndian.PutUint32(n[:], uint32(len(data)))
		out.WriteByte(status)
		out.Write(n[:])
		out.Write(data)
	}
}
