#!/usr/bin/env python3
# Host-side check of the index logic of kernels/cuda/ without a GPU: a
# line-by-line transliteration of the host plan (w4a16_cuda_plan.c: group
# size clamp, 64-bit group count, eligibility, row chunks of 16, split
# count, piece size), of w4a16_launch_mma, the kernel (x staging per
# piece, 128-bit lane loads, quad word transpose, magic-number dequant pair
# order, B fragments by byte permute, per-32-block group scale, 8-warp
# reduction) and the split-K reduction, run on a model of
# mma.sync.m16n8k16 fragments (PTX ISA: A row = groupID (+8 for a1/a3),
# col = 2*tid (+8 for a2/a3); B row = 2*tid (+8 for b1), col = groupID; C
# row = groupID (+8 for c2/c3), col = 2*tid + (i & 1)) with exact integers,
# and of the GEMV's scale indexing. Scale reads are bounds-checked.
#
# It also replays the host and kernel arithmetic from before issue 19
# (group_size cast to int, (K + g - 1) / g and k / g in 32-bit C
# arithmetic, M guarded by a constant only) on the cases, to show
# what the new tests catch: old results are printed, not required.
#
# It checks the design and its transliteration, not the compiled kernel:
# keep it in step with the .cu and plan files; the real check is
# test_w4a16_cuda on a GPU.
# Usage: python3 kernels/cuda/emulate_mma.py   (exit 0 when every case
# under the current logic matches)
import random, struct, sys
kWarps, kThreads, kChunk, kPad, kSmemBytes = 8, 256, 128, 32, 40*1024
MAX_M = 16                        # QB_W4A16_CUDA_MAX_M
MAX_N, MAX_K = (2**31-1)//16, (2**31-1)//2

class Fault(Exception):
    """What a GPU would do wrong: out-of-bounds read, division by zero, a
    loop that never ends."""

def i32(v):                        # C conversion to int (two's complement wrap)
    v &= 0xffffffff
    return v - (1 << 32) if v >= 1 << 31 else v

def cdiv(a, b):                    # C integer division (truncates toward zero)
    if b == 0: raise Fault("integer division by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q

# ---- host plan (w4a16_cuda_plan.c)
def plan_sizes(M, N, K, g):
    if M < 1 or N < 1 or K < 1 or g < 1: return None
    if N > MAX_N or K > MAX_K or M > 2**31-1: return None
    gk = min(g, K)                  # one group per row for any g >= K
    return gk, K//gk + (K % gk != 0)

def splits_for(N, K, sms):          # w4a16_cuda_mma_splits
    ctas, chunks = (N+15)//16, (K+kChunk-1)//kChunk
    s = 1
    while s < 16 and ctas*s < 4*sms and chunks//(2*s) >= kWarps: s *= 2
    return s

def piece_for(M, cps):              # w4a16_cuda_mma_piece
    if M < 1 or M > MAX_M or cps < 1: return 0
    piece = (kSmemBytes//(2*M) - kPad)//kChunk
    piece = 64 if piece >= 64 else piece//kWarps*kWarps
    return min(piece, cps)

def piece_old(M, cps):              # the launcher before issue 19: no guard
    piece = (kSmemBytes//(2*M) - kPad)//kChunk
    piece = 64 if piece >= 64 else piece//kWarps*kWarps
    return min(piece, cps)

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

# ---- problem data (ground truth in Python integers; scales stored
# [N][ceil(K / g)] as the format says, whatever g is)
def make_data(M, N, K, g, seed, rows=None, xfun=None, scale_vals=None):
    rnd = random.Random(seed)
    q = [[rnd.randint(-8, 7) for _ in range(K)] for _ in range(N)]
    x = [[(xfun(m, k) if xfun else rnd.randint(-3, 3)) for k in range(K)] for m in range(M)]
    if rows:                        # row n's sum of q*x must be rows[n]
        for n in range(N):
            dot = sum(q[n][k]*x[0][k] for k in range(K))
            for k in reversed(range(K)):
                if dot == rows[n]: break
                if x[0][k] == 0: continue
                nq = max(-8, min(7, q[n][k] + (rows[n]-dot)*x[0][k]))
                dot += (nq - q[n][k])*x[0][k]; q[n][k] = nq
            assert dot == rows[n]
    scols = K//g + (K % g != 0)
    if scale_vals: scales = [scale_vals[n] for n in range(N) for _ in range(scols)]
    else: scales = [rnd.choice([-2, -1, 0, 1, 2, 3]) for _ in range(N*scols)]
    packed = [[((q[r][2*b]+8) | ((q[r][2*b+1]+8) << 4)) for b in range(K//2)] for r in range(N)]
    ref = [[sum(q[n][k]*scales[n*scols + k//g]*x[m][k] for k in range(K)) for n in range(N)] for m in range(M)]
    return dict(q=q, x=x, packed=packed, scales=scales, ref=ref, M=M, N=N, K=K)

def scale_reader(d, scols_k):       # srow = scales + r * scols; srow[grp], bounds-checked
    sc = d['scales']
    def at(r, grp):
        i = r*scols_k + grp
        if not 0 <= i < len(sc): raise Fault(f"scale read out of bounds: index {i} of {len(sc)}")
        return sc[i]
    return at

# ---- GEMV (w4a16_gemv.cu): both paths read srow[k / g] for each column
def emulate_gemv(d, M, gk, scols_k):
    at = scale_reader(d, scols_k)
    return [[sum(d['q'][n][k]*at(n, cdiv(k, gk))*d['x'][m][k] for k in range(d['K']))
             for n in range(d['N'])] for m in range(M)]

# ---- mma launcher + kernel + split-K reduction (w4a16_mma.cu)
def emulate_mma(d, M, gk, scols_k, sms, m0=0, old_piece=False):
    N, K, packed, x = d['N'], d['K'], d['packed'], d['x']
    at = scale_reader(d, scols_k)
    rb = K // 2
    NT = 1 if M <= 8 else 2
    splits = splits_for(N, K, sms)
    chunks = (K+kChunk-1)//kChunk
    cps = (chunks+splits-1)//splits
    real_splits = (chunks+cps-1)//cps
    piece = piece_old(M, cps) if old_piece else piece_for(M, cps)
    if piece < 1: raise Fault(f"piece {piece} for M = {M}: the piece loop never advances")
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
                        xs[m*srow + u*8 + j] = x[m0+m][k+j] if k < K else 0
                for warp in range(kWarps):
                    for c in range(pc+warp, pend, 2*kWarps):
                        for cc in (c, c+kWarps):
                            if cc >= pend: continue
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
                                grp = cdiv(kb, gk)
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
                                    d_ = mma(alo, blo); e = mma(ahi, bhi)
                                    for l in range(32):
                                        gq = l >> 2
                                        r0, r1 = n0+gq, n0+gq+8
                                        sc0 = at(r0, grp) if r0 < N else 0
                                        sc1 = at(r1, grp) if r1 < N else 0
                                        a = acc[warp*32+l][nt]
                                        a[0] += sc0*(d_[l][0]+e[l][0]); a[1] += sc0*(d_[l][1]+e[l][1])
                                        a[2] += sc1*(d_[l][2]+e[l][2]); a[3] += sc1*(d_[l][3]+e[l][3])
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
    return y, real_splits, piece

# ---- one call under the current logic (qb_w4a16_cuda.cu + plan)
def call_new(d, g, sms, kernel="auto"):
    M, N, K = d['M'], d['N'], d['K']
    gk, scols = plan_sizes(M, N, K, g)
    if i32(gk) != gk or i32(scols) != scols:   # the launchers take int
        raise Fault(f"g = {gk} or scols = {scols} does not fit the kernels' int arguments")
    use_mma = kernel != "gemv" and K % 32 == 0 and gk % 32 == 0
    y, info = [], []
    for m0 in range(0, M, MAX_M):   # row chunks
        mc = min(MAX_M, M - m0)
        if use_mma:
            yc, sp, pc = emulate_mma(d, mc, gk, scols, sms, m0)
            info.append(f"mma splits={sp} piece={pc}")
        else:
            sub = dict(d, x=d['x'][m0:m0+mc])
            yc = emulate_gemv(sub, mc, gk, scols); info.append("gemv")
        y += yc
    return y, f"g->{gk} scols={scols} " + ",".join(sorted(set(info))) + (f" chunks={len(range(0, M, MAX_M))}" if M > MAX_M else "")

# ---- the same call before issue 19
def call_old(d, g, sms):
    M, N, K = d['M'], d['N'], d['K']
    gk = i32(g)                                   # (int)group_size at the launch
    scols = cdiv(i32(K + gk - 1), gk)             # (K + g - 1) / g in the kernels, in int
    eligible = K % 32 == 0 and g % 32 == 0        # eligibility on the int64 value
    if eligible:
        y, _, _ = emulate_mma(d, M, gk, scols, sms, old_piece=True)
        return y, f"mma g->{gk} scols={scols}"
    return emulate_gemv(d, M, gk, scols), f"gemv g->{gk} scols={scols}"

def try_new(d, g, sms, kernel="auto"):
    try:
        return call_new(d, g, sms, kernel)
    except Fault as f:
        return None, str(f)

def show(y): return "[" + ", ".join(str(v) for v in y[0][:4]) + (", ..." if len(y[0]) > 4 else "") + "]"

allok = True
print("current logic, random cases (exact integers):")
cases = [(16, 16, 3072, 128, 1), (4, 16, 2048, 32, 1000), (1, 20, 256, 128, 132), (3, 16, 1056, 96, 82),
         (9, 33, 4128, 128, 132), (16, 8, 2080, 2080, 16), (2, 40, 640, 32, 132), (12, 17, 3072, 64, 28),
         (6, 5, 1024, 64, 132), (11, 3, 2048, 128, 132), (13, 7, 512, 32, 132), (15, 24, 1024, 96, 132),
         (17, 9, 1024, 128, 132), (20, 16, 4096, 128, 132), (33, 4, 512, 32, 132), (5, 3, 1024, 48, 132),
         (2, 3, 512, 2**32 + 32, 132), (3, 16, 160, 7, 132)]
for i, (M, N, K, g, sms) in enumerate(cases):
    d = make_data(M, N, K, g, seed=i)
    y, how = try_new(d, g, sms)
    ok = y == d['ref']; allok &= ok
    print(f"  M={M} N={N} K={K} g={g} sms={sms}: {how}: {'OK' if ok else 'MISMATCH'}")

# Issue 19: K = 4096, N = 3, scales 1, 2, -3, row sums -321, 302, 682
# (x = +1, -1, 0, 0 repeating): every g >= K must give -321, 604, -2046.
print("issue 19 example, K=4096 N=3 scales 1, 2, -3 (want [-321, 604, -2046]):")
xf = lambda m, k: (1, -1, 0, 0)[k % 4]
want = [[-321, 604, -2046]]
cache = {}
for g in (4096, 4097, 8192, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**32 + 32, 2**62, 2**63 - 1):
    d = make_data(1, 3, 4096, g, seed=19, rows=[-321, 302, 682], xfun=xf, scale_vals=[1, 2, -3])
    assert d['ref'] == want
    for kernel in ("auto", "gemv"):
        key = (plan_sizes(1, 3, 4096, g), kernel)
        if key not in cache: cache[key] = try_new(d, g, 132, kernel)
        y, how = cache[key]
        ok = y == want; allok &= ok
        print(f"  g={g} {kernel}: now {how}: {show(y) if y else ''} {'OK' if ok else 'MISMATCH'}")
    try:
        y, how = call_old(d, g, 132)
        print(f"  g={g}      before: {how}: {show(y)} {'same' if y == want else 'WRONG'}")
    except Fault as f:
        print(f"  g={g}      before: {f}")

print("M above 16 (the header constant was the only guard):")
for M in (17, 19, 20, 33):
    d = make_data(M, 16, 1024, 128, seed=M)
    y, how = try_new(d, 128, 132)
    ok = y == d['ref']; allok &= ok
    print(f"  M={M}: now {how}: {'OK' if ok else 'MISMATCH'}")
    try:
        y, _, piece = emulate_mma(d, M, 128, 8, 132, old_piece=True)
        unwritten = sum(v is None for row in y for v in row)
        print(f"  M={M}      before (kernel called with M): piece={piece}, {unwritten} outputs never written")
    except Fault as f:
        print(f"  M={M}      before (kernel called with M): {f}")
for M in range(1, MAX_M + 1):
    allok &= all(piece_for(M, cps) >= 1 for cps in range(1, 200))
allok &= piece_for(MAX_M + 1, 64) == 0

sys.exit(0 if allok else 1)
