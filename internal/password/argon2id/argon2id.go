// Copyright 2017 The Go Authors. All rights reserved.
// Use of this source code is governed by a BSD-style
// license that can be found in the LICENSE file.

// Package argon2id is golang.org/x/crypto/argon2 (v0.58.0), Argon2id only,
// with one change: the caller gives the memory the function fills, so a
// server that hashes passwords all day reuses a few buffers instead of
// allocating (and having the kernel zero, and the collector reclaim) 64 MiB
// per login. The first pass therefore overwrites each block, as RFC 9106
// specifies, instead of XORing into memory it assumes is zero. The
// assembly and the BLAKE2b helpers are x/crypto's, unchanged. Results are
// bit for bit x/crypto's (see the tests: the RFC 9106 vector, and x/crypto
// on random inputs with dirty reused memory).
package argon2id

import (
	"encoding/binary"

	"golang.org/x/crypto/blake2b"
)

// Version is the Argon2 version implemented (v1.3).
const Version = 0x13

const argon2id = 2

const (
	blockLength = 128
	syncPoints  = 4
)

type block [blockLength]uint64

// Memory is the working memory of one hash at a time. Its contents between
// hashes are irrelevant: every hash overwrites what it reads.
type Memory struct {
	blocks []block
}

// NewMemory returns memory for hashes of up to memoryKiB.
func NewMemory(memoryKiB uint32) *Memory { return &Memory{blocks: make([]block, memoryKiB)} }

// Fits reports whether m is large enough for a hash of memoryKiB.
func (m *Memory) Fits(memoryKiB uint32) bool { return m != nil && uint32(len(m.blocks)) >= memoryKiB }

// Key derives an Argon2id key as golang.org/x/crypto/argon2.IDKey does,
// in mem when it fits (nil, or too small: fresh memory for this call).
// Unlike IDKey it computes the lanes one after another on the calling
// goroutine, not one goroutine each: the same key, in threads times the
// time, on one core. A server that bounds the cores its hashes take (so
// that logins cannot starve other requests) counts one per hash.
func Key(mem *Memory, password, salt []byte, time, memory uint32, threads uint8, keyLen uint32) []byte {
	if time < 1 {
		panic("argon2id: number of rounds too small")
	}
	if threads < 1 {
		panic("argon2id: parallelism degree too low")
	}
	h0 := initHash(password, salt, nil, nil, time, memory, uint32(threads), keyLen, argon2id)

	memory = memory / (syncPoints * uint32(threads)) * (syncPoints * uint32(threads))
	if memory < 2*syncPoints*uint32(threads) {
		memory = 2 * syncPoints * uint32(threads)
	}
	if !mem.Fits(memory) {
		mem = NewMemory(memory)
	}
	B := mem.blocks[:memory]
	initBlocks(B, &h0, memory, uint32(threads))
	processBlocks(B, time, memory, uint32(threads), argon2id)
	return extractKey(B, memory, uint32(threads), keyLen)
}

func initHash(password, salt, key, data []byte, time, memory, threads, keyLen uint32, mode int) [blake2b.Size + 8]byte {
	var (
		h0     [blake2b.Size + 8]byte
		params [24]byte
		tmp    [4]byte
	)

	b2, _ := blake2b.New512(nil)
	binary.LittleEndian.PutUint32(params[0:4], threads)
	binary.LittleEndian.PutUint32(params[4:8], keyLen)
	binary.LittleEndian.PutUint32(params[8:12], memory)
	binary.LittleEndian.PutUint32(params[12:16], time)
	binary.LittleEndian.PutUint32(params[16:20], uint32(Version))
	binary.LittleEndian.PutUint32(params[20:24], uint32(mode))
	b2.Write(params[:])
	binary.LittleEndian.PutUint32(tmp[:], uint32(len(password)))
	b2.Write(tmp[:])
	b2.Write(password)
	binary.LittleEndian.PutUint32(tmp[:], uint32(len(salt)))
	b2.Write(tmp[:])
	b2.Write(salt)
	binary.LittleEndian.PutUint32(tmp[:], uint32(len(key)))
	b2.Write(tmp[:])
	b2.Write(key)
	binary.LittleEndian.PutUint32(tmp[:], uint32(len(data)))
	b2.Write(tmp[:])
	b2.Write(data)
	b2.Sum(h0[:0])
	return h0
}

func initBlocks(B []block, h0 *[blake2b.Size + 8]byte, memory, threads uint32) {
	var block0 [1024]byte
	for lane := uint32(0); lane < threads; lane++ {
		j := lane * (memory / threads)
		binary.LittleEndian.PutUint32(h0[blake2b.Size+4:], lane)

		binary.LittleEndian.PutUint32(h0[blake2b.Size:], 0)
		blake2bHash(block0[:], h0[:])
		for i := range B[j+0] {
			B[j+0][i] = binary.LittleEndian.Uint64(block0[i*8:])
		}

		binary.LittleEndian.PutUint32(h0[blake2b.Size:], 1)
		blake2bHash(block0[:], h0[:])
		for i := range B[j+1] {
			B[j+1][i] = binary.LittleEndian.Uint64(block0[i*8:])
		}
	}
}

func processBlocks(B []block, time, memory, threads uint32, mode int) {
	lanes := memory / threads
	segments := lanes / syncPoints

	processSegment := func(n, slice, lane uint32) {
		var addresses, in, zero block
		if n == 0 && slice < syncPoints/2 {
			in[0] = uint64(n)
			in[1] = uint64(lane)
			in[2] = uint64(slice)
			in[3] = uint64(memory)
			in[4] = uint64(time)
			in[5] = uint64(mode)
		}

		index := uint32(0)
		if n == 0 && slice == 0 {
			index = 2 // we have already generated the first two blocks
			in[6]++
			processBlock(&addresses, &in, &zero)
			processBlock(&addresses, &addresses, &zero)
		}

		offset := lane*lanes + slice*segments + index
		var random uint64
		for index < segments {
			prev := offset - 1
			if index == 0 && slice == 0 {
				prev += lanes // last block in lane
			}
			if n == 0 && slice < syncPoints/2 {
				if index%blockLength == 0 {
					in[6]++
					processBlock(&addresses, &in, &zero)
					processBlock(&addresses, &addresses, &zero)
				}
				random = addresses[index%blockLength]
			} else {
				random = B[prev][0]
			}
			newOffset := indexAlpha(random, lanes, segments, threads, n, slice, lane, index)
			// The first pass writes each block; later passes XOR into it.
			if n == 0 {
				processBlock(&B[offset], &B[prev], &B[newOffset])
			} else {
				processBlockXOR(&B[offset], &B[prev], &B[newOffset])
			}
			index, offset = index+1, offset+1
		}
	}

	for n := uint32(0); n < time; n++ {
		for slice := uint32(0); slice < syncPoints; slice++ {
			// A slice's segments read only what earlier slices wrote, so
			// their order does not change the key.
			for lane := uint32(0); lane < threads; lane++ {
				processSegment(n, slice, lane)
			}
		}
	}

}

func extractKey(B []block, memory, threads, keyLen uint32) []byte {
	lanes := memory / threads
	for lane := uint32(0); lane < threads-1; lane++ {
		for i, v := range B[(lane*lanes)+lanes-1] {
			B[memory-1][i] ^= v
		}
	}

	var block [1024]byte
	for i, v := range B[memory-1] {
		binary.LittleEndian.PutUint64(block[i*8:], v)
	}
	key := make([]byte, keyLen)
	blake2bHash(key, block[:])
	return key
}

func indexAlpha(rand uint64, lanes, segments, threads, n, slice, lane, index uint32) uint32 {
	refLane := uint32(rand>>32) % threads
	if n == 0 && slice == 0 {
		refLane = lane
	}
	m, s := 3*segments, ((slice+1)%syncPoints)*segments
	if lane == refLane {
		m += index
	}
	if n == 0 {
		m, s = slice*segments, 0
		if slice == 0 || lane == refLane {
			m += index
		}
	}
	if index == 0 || lane == refLane {
		m--
	}
	return phi(rand, uint64(m), uint64(s), refLane, lanes)
}

func phi(rand, m, s uint64, lane, lanes uint32) uint32 {
	p := rand & 0xFFFFFFFF
	p = (p * p) >> 32
	p = (p * m) >> 32
	return lane*lanes + uint32((s+m-(p+1))%uint64(lanes))
}
