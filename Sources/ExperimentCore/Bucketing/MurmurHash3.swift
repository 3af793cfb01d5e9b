/// MurmurHash3, x86 32-bit variant, as the reference SDK's `pymmh3.hash` (then `& 0xFFFFFFFF`).
///
/// Input is the raw bytes (the reference hashes `str.encode()`, i.e. UTF-8). Blocks are read
/// little-endian whatever the host byte order.
public enum MurmurHash3 {
    @usableFromInline static let c1: UInt32 = 0xCC9E_2D51
    @usableFromInline static let c2: UInt32 = 0x1B87_3593

    @inlinable @inline(__always)
    static func rotl(_ x: UInt32, _ r: UInt32) -> UInt32 {
        (x &<< r) | (x &>> (32 &- r))
    }

    /// Scrambles one 4-byte block (the `k1` steps shared by body and tail).
    @inlinable @inline(__always)
    static func scramble(_ k: UInt32) -> UInt32 {
        rotl(k &* c1, 15) &* c2
    }

    /// Mixes one full block into the running state.
    @inlinable @inline(__always)
    static func mix(_ h: UInt32, _ k: UInt32) -> UInt32 {
        rotl(h ^ scramble(k), 13) &* 5 &+ 0xE654_6B64
    }

    @inlinable @inline(__always)
    static func finalize(_ h: UInt32, tail: UInt32, tailCount: Int, length: Int) -> UInt32 {
        var h = h
        if tailCount > 0 { h ^= scramble(tail) }
        h ^= UInt32(truncatingIfNeeded: length)
        h ^= h &>> 16
        h = h &* 0x85EB_CA6B
        h ^= h &>> 13
        h = h &* 0xC2B2_AE35
        h ^= h &>> 16
        return h
    }

    @inlinable @inline(__always)
    static func block(_ p: UnsafeRawBufferPointer, _ offset: Int) -> UInt32 {
        UInt32(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    /// Hashes `count` full blocks of `p` starting at `start` into `h`.
    @inlinable @inline(__always)
    static func body(_ h: UInt32, _ p: UnsafeRawBufferPointer, from start: Int, blocks: Int) -> UInt32 {
        var h = h
        var offset = start
        var n = blocks
        while n > 0 {
            h = mix(h, block(p, offset))
            offset &+= 4
            n &-= 1
        }
        return h
    }

    /// The 32-bit hash of `bytes` (unsigned, as the reference after `& 0xFFFFFFFF`).
    @inlinable
    public static func x86_32(_ bytes: UnsafeRawBufferPointer, seed: UInt32) -> UInt32 {
        let n = bytes.count
        let blocks = n &>> 2
        let h = body(seed, bytes, from: 0, blocks: blocks)
        var tail: UInt32 = 0
        let tailStart = blocks &<< 2
        var i = n &- 1
        while i >= tailStart {
            tail = (tail &<< 8) | UInt32(bytes[i])
            i &-= 1
        }
        return finalize(h, tail: tail, tailCount: n &- tailStart, length: n)
    }

    /// The hash of the bytes of `first` followed by those of `second`, without copying them:
    /// the 4-byte blocks are streamed across the boundary.
    @inlinable
    public static func x86_32(
        concatenating first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer, seed: UInt32
    ) -> UInt32 {
        let n1 = first.count
        let n2 = second.count
        let length = n1 &+ n2
        let blocks1 = n1 &>> 2
        var h = body(seed, first, from: 0, blocks: blocks1)
        // Bytes of `first` left over after its full blocks (0...3), little-endian in `carry`.
        let rest = n1 &- (blocks1 &<< 2)
        var carry: UInt32 = 0
        var j = 0
        while j < rest {
            carry |= UInt32(first[(blocks1 &<< 2) &+ j]) &<< UInt32(truncatingIfNeeded: j &<< 3)
            j &+= 1
        }
        // Complete the straddling block from the start of `second` if it has enough bytes.
        var offset = 0  // where `second`'s own blocks start
        var pending = rest  // bytes in `carry`
        if rest > 0 {
            let need = 4 &- rest
            if n2 >= need {
                var k = 0
                while k < need {
                    carry |= UInt32(second[k]) &<< UInt32(truncatingIfNeeded: (rest &+ k) &<< 3)
                    k &+= 1
                }
                h = mix(h, carry)
                carry = 0
                pending = 0
                offset = need
            }
        }
        if pending == 0 {
            let remaining = n2 &- offset
            let blocks2 = remaining &>> 2
            h = body(h, second, from: offset, blocks: blocks2)
            var t = offset &+ (blocks2 &<< 2)
            var shift: UInt32 = 0
            while t < n2 {
                carry |= UInt32(second[t]) &<< shift
                shift &+= 8
                t &+= 1
                pending &+= 1
            }
        } else {
            // `second` is too short to complete the block: everything left is tail.
            var k = 0
            while k < n2 {
                carry |= UInt32(second[k]) &<< UInt32(truncatingIfNeeded: (pending &+ k) &<< 3)
                k &+= 1
            }
            pending &+= n2
        }
        return finalize(h, tail: carry, tailCount: pending, length: length)
    }

    /// The same hash as `x86_32(concatenating:_:seed:)` when `second` is followed in memory by at least 4
    /// readable zero bytes (the config's zero-padded ids, see HotTables): the block that straddles the two
    /// parts and the tail are then read as words instead of byte by byte.
    @inlinable
    public static func x86_32(
        concatenating first: UnsafeRawBufferPointer, zeroPadded second: UnsafeRawBufferPointer, seed: UInt32
    ) -> UInt32 {
        let n1 = first.count
        let n2 = second.count
        guard n1 >= 4, let tailBase = second.baseAddress else {
            return x86_32(concatenating: first, second, seed: seed)
        }
        let blocks1 = n1 &>> 2
        var h = body(seed, first, from: 0, blocks: blocks1)
        let rest = n1 & 3
        var offset = 0
        if rest > 0 {
            // The last `rest` bytes of `first`, then the first bytes of `second` (zeros past its end).
            let carry = first.loadUnaligned(fromByteOffset: n1 &- 4, as: UInt32.self).littleEndian
                &>> UInt32(truncatingIfNeeded: (4 &- rest) &<< 3)
            let next = UInt32(littleEndian: tailBase.loadUnaligned(as: UInt32.self))
            let block = carry | next &<< UInt32(truncatingIfNeeded: rest &<< 3)
            let need = 4 &- rest
            guard n2 >= need else {
                // `second` ends inside this block: it is the tail.
                return finalize(h, tail: block, tailCount: rest &+ n2, length: n1 &+ n2)
            }
            h = mix(h, block)
            offset = need
        }
        let blocks2 = (n2 &- offset) &>> 2
        h = body(h, second, from: offset, blocks: blocks2)
        let tailStart = offset &+ (blocks2 &<< 2)
        let tail = UInt32(littleEndian: tailBase.loadUnaligned(fromByteOffset: tailStart, as: UInt32.self))
        return finalize(h, tail: tail, tailCount: n2 &- tailStart, length: n1 &+ n2)
    }
}
