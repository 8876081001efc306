#!/usr/bin/env python3
# Host-side check of the index logic of kernels/cuda/w4a16_mma.cu without a
# GPU: a line-by-line transliteration of w4a16_launch_mma, the kernel (x
# staging per piece, 128-bit lane loads, quad word transpose, magic-number
# dequant pair order, B fragments by byte permute, per-32-block group
# scale, 8-warp reduction) and the split-K reduction, run on a model of
# mma.sync.m16n8k16 fragments (PTX ISA: A row = groupID (+8 for a1/a3),
# col = 2*tid (+8 for a2/a3); B row = 2*tid (+8 for b1), col = groupID; C
# row = groupID (+8 for c2/c3), col = 2*tid + (i & 1)) with exact integers.
# It checks the design and its transliteration, not the compiled kernel:
# keep it in step with the .cu file; the real check is test_w4a16_cuda on a GPU.
# Usage: python3 kernels/cuda/emulate_mma.py   (exit 0 when every case matches)
import random, struct, sys
kWarps, kThreads, kChunk, kPad, kSmemBytes = 8, 256, 128, 32, 40*1024

def splits_for(N, K, sms):
    ctas, chunks = (N+15)//16, (K+kChunk-1)//kChunk
    s = 1
    while s < 16 and ctas*s < 4*sms and chunks//(2*s) >= kWarps: s *= 2
    return s

def dequant(w):
    q = [((w >> (4*i)) & 15) - 8 for i in range(8)]
    return [(q[0],q[4]), (q[1],q[5]), (q[2],q[6]), (q[3],q[7])]

def quad_transpose(words4):  # words4[t] = [w.x,w.y,w.z,w.w] for t in 0..3 (one quad)
    v = [list(w) for w in words4]
    send = [((v[t][0], v[t][2]) if t & 1 else (v[t][1], v[t][3])) for t in range(4)]
    for t in range(4):
        s0, s1 = send[t ^ 1]
        if t & 1: v[t][0], v[t][2] = s0, s1
        else: v[t][1], v[t][3] = s0, s1
    send = [((v[t][0], v[t][1]) if t & 2 else (v[t][2], v[t][3])) for t in range(4)]
    for t in range(4):
        u0, u1 = send[t ^ 2]
        if t & 2: v[t][0], v[t][1] = u0, u1
        else: v[t][2], v[t][3] = u0, u1
    return v

def mma(a, b):  # a[lane] 4 pairs, b[lane] 2 pairs -> d[lane] 4 values
    A = [[0]*16 for _ in range(16)]; B = [[0]*8 for _ in range(16)]
    for l in range(32):
        g, t = l >> 2, l & 3
        A[g][2*t], A[g][2*t+1] = a[l][0]; A[g+8][2*t], A[g+8][2*t+1] = a[l][1]
        A[g][2*t+8], A[g][2*t+9] = a[l][2]; A[g+8][2*t+8], A[g+8][2*t+9] = a[l][3]
        B[2*t][g], B[2*t+1][g] = b[l][0]; B[2*t+8][g], B[2*t+9][g] = b[l][1]
    D = [[sum(A[i][k]*B[k][j] for k in range(16)) for j in range(8)] for i in range(16)]
    return [[D[l>>2][2*(l&3)], D[l>>2][2*(l&3)+1], D[(l>>2)+8][2*(l&3)], D[(l>>2)+8][2*(l&3)+1]] for l in range(32)]

def word(bs, off): return struct.unpack('<I', bytes(bs[off:off+4]))[0]

def run(M, N, K, g, sms, seed):
    rnd = random.Random(seed)
    q = [[rnd.randint(-8, 7) for _ in range(K)] for _ in range(N)]
    rb = K // 2
    packed = [[((q[r][2*b]+8) | ((q[r][2*b+1]+8) << 4)) for b in range(rb)] for r in range(N)]
    scols = (K+g-1)//g
    scales = [[rnd.choice([-2, -1, 0, 1, 2, 3]) for _ in range(scols)] for _ in range(N)]
    x = [[rnd.randint(-3, 3) for _ in range(K)] for _ in range(M)]
    ref = [[sum(q[n][k]*scales[n][k//g]*x[m][k] for k in range(K)) for n in range(N)] for m in range(M)]
    NT = 1 if M <= 8 else 2
    splits = splits_for(N, K, sms)
    chunks = (K+kChunk-1)//kChunk
    cps = (chunks+splits-1)//splits
    real_splits = (chunks+cps-1)//cps
    piece = (kSmemBytes//(2*M) - kPad)//kChunk
    piece = 64 if piece >= 64 else piece//kWarps*kWarps
    if piece > cps: piece = cps
    partial = {}
    y = [[None]*N for _ in range(M)]
    for by in range(real_splits):
        for bx in range((N+15)//16):
            n0 = bx*16
            c_begin = by*cps; c_end = min(chunks, c_begin+cps)
            srow = piece*kChunk + kPad
            acc = [[[0]*4 for _ in range(NT)] for _ in range(32*kWarps)]
            for pc in range(c_begin, c_end, piece):
                pend = min(c_end, pc+piece)
                units = (pend-pc)*(kChunk//8)
                xs = {}
                for i in range(M*units):
                    m, u = i//units, i % units
                    k = pc*kChunk + u*8
                    for j in range(8):
                        xs[m*srow + u*8 + j] = x[m][k+j] if k < K else 0
                for warp in range(kWarps):
                    for c in range(pc+warp, pend, 2*kWarps):
                        for cc in (c, c+kWarps):
                            if cc >= pend: continue
                            # loads for all lanes
                            W = {}
                            for l in range(32):
                                gq, t = l >> 2, l & 3
                                for which, r in ((0, n0+gq), (1, n0+gq+8)):
                                    off = cc*64 + 16*t
                                    if off < rb and r < N:
                                        W[(l, which)] = [word(packed[r], off+4*i) for i in range(4)]
                                    else:
                                        W[(l, which)] = [0x88888888]*4
                            for which in (0, 1):
                                for quad in range(8):
                                    res = quad_transpose([W[(quad*4+t, which)] for t in range(4)])
                                    for t in range(4): W[(quad*4+t, which)] = res[t]
                            for s in range(4):
                                kb = cc*kChunk + 32*s
                                if kb >= K: break
                                grp = kb // g
                                for nt in range(NT):
                                    alo, ahi, blo, bhi = [], [], [], []
                                    for l in range(32):
                                        gq, t = l >> 2, l & 3
                                        h0 = dequant(W[(l,0)][s]); h1 = dequant(W[(l,1)][s])
                                        alo.append([h0[0], h1[0], h0[1], h1[1]]); ahi.append([h0[2], h1[2], h0[3], h1[3]])
                                        m = nt*8 + gq
                                        base = (cc-pc)*kChunk
                                        xv = [xs[m*srow + base + 32*s + 8*t + j] if m < M else 0 for j in range(8)]
                                        blo.append([(xv[0], xv[4]), (xv[1], xv[5])]); bhi.append([(xv[2], xv[6]), (xv[3], xv[7])])
                                    d = mma(alo, blo); e = mma(ahi, bhi)
                                    for l in range(32):
                                        gq = l >> 2
                                        r0, r1 = n0+gq, n0+gq+8
                                        sc0 = scales[r0][grp] if r0 < N else 0
                                        sc1 = scales[r1][grp] if r1 < N else 0
                                        a = acc[warp*32+l][nt]
                                        a[0] += sc0*(d[l][0]+e[l][0]); a[1] += sc0*(d[l][1]+e[l][1])
                                        a[2] += sc1*(d[l][2]+e[l][2]); a[3] += sc1*(d[l][3]+e[l][3])
            for tid in range(32*NT*4):
                l, i = tid//(NT*4), tid % (NT*4)
                nt, j = i//4, i % 4
                row = n0 + (l >> 2) + (8 if j >= 2 else 0)
                m = nt*8 + 2*(l & 3) + (j & 1)
                v = sum(acc[w*32+l][nt][j] for w in range(kWarps))
                if row < N and m < M:
                    if real_splits > 1: partial[(by, m, row)] = v
                    else: y[m][row] = v
    if real_splits > 1:
        for m in range(M):
            for n in range(N):
                y[m][n] = sum(partial[(s, m, n)] for s in range(real_splits))
    ok = y == ref
    print(f"M={M} N={N} K={K} g={g} sms={sms} splits={real_splits} piece={piece}: {'OK' if ok else 'MISMATCH'}")
    return ok

cases = [(16, 16, 3072, 128, 1), (4, 16, 2048, 32, 1000), (1, 20, 256, 128, 132), (3, 16, 1056, 96, 82), (9, 33, 4128, 128, 132), (16, 8, 2080, 2080, 16),
         (2, 40, 640, 32, 132), (12, 17, 3072, 64, 28)]
allok = all(run(*c, seed=i) for i, c in enumerate(cases))
sys.exit(0 if allok else 1)
