"""Eight-lane vector operations for numba kernels that run eight independent problems in lockstep.

numba compiles with LLVM's loop vectoriser but not its SLP vectoriser, so a loop over eight
lanes is unrolled into scalar code. These intrinsics emit the eight-wide operation directly
(``<8 x double>``; LLVM splits it into the machine's vector width, AVX-512, AVX2 or SSE).
Arguments are 1-D C-contiguous float64 arrays and element offsets; a vector is the eight
consecutive elements from its offset, and a row of vectors is spaced ``stride`` elements apart.
Without the JIT (``NUMBA_DISABLE_JIT=1``) plain numpy twins with the same meaning are used.
No bounds are checked: the callers index within their arrays.
"""

from __future__ import annotations

import numpy as np
from numba import config, types
from numba.extending import intrinsic

__all__ = [
    "LANES",
    "FMA_CHAINS",
    "vdotsub",
    "vdotsub2",
    "vblock",
    "vexpr",
    "vfill",
    "vmul",
    "vsqrt_inv",
    "vcopy",
    "vschur",
    "vfma_chains",
]

LANES = 8
#: independent accumulators of :func:`vfma_chains` (enough to hide the FMA latency)
FMA_CHAINS = 8

if config.DISABLE_JIT:

    def vfma_chains(n, a, b):  # type: ignore[no-untyped-def]
        """FMA_CHAINS independent eight-wide chains acc = acc * a + b, n steps each, from acc = 1;
        returns the sum of every lane of every chain (2 * 8 * FMA_CHAINS * n flops)."""
        acc = np.ones((FMA_CHAINS, LANES))
        for _ in range(n):
            acc = acc * a + b
        return float(acc.sum())

    def vdotsub(dst, d, a, ia, b, ib, n, stride):  # type: ignore[no-untyped-def]
        """dst[d:d+8] -= sum over q < n of a[ia + q stride:+8] * b[ib + q stride:+8]."""
        for q in range(n):
            dst[d : d + LANES] -= (
                a[ia + q * stride : ia + q * stride + LANES] * b[ib + q * stride : ib + q * stride + LANES]
            )

    def vexpr(fn):  # type: ignore[no-untyped-def]
        """An eight-wide operation from an expression (see the compiled twin below)."""

        def op(dst, d, arrs, offs, scal):  # type: ignore[no-untyped-def]
            vecs = [arr[o : o + LANES] for arr, o in zip(arrs, offs)]
            dst[d : d + LANES] = fn(dst[d : d + LANES].copy(), vecs, list(scal))

        return op

    def vblock(dst, a, b, row, n, nr, nc):  # type: ignore[no-untyped-def]
        """For r < nr, c < nc: dst[a + r row + 8 (n + c):+8] -= sum over q < n of
        dst[a + r row + 8 q:+8] * dst[b + c row + 8 q:+8] (a block of a row-major lane matrix:
        rows a.., columns n.., against rows b..; see :func:`kernels._jit_lanes._factor`)."""
        for r in range(nr):
            for c in range(nc):
                acc = np.zeros(LANES)
                for q in range(n):
                    ia = a + r * row + q * LANES
                    ib = b + c * row + q * LANES
                    acc += dst[ia : ia + LANES] * dst[ib : ib + LANES]
                o = a + r * row + (n + c) * LANES
                dst[o : o + LANES] -= acc

    def vdotsub2(dst, d1, d2, a, ia1, ia2, b, ib, n, stride):  # type: ignore[no-untyped-def]
        """:func:`vdotsub` into dst[d1] with a row at ia1 and into dst[d2] with a row at ia2,
        against the same b row."""
        vdotsub(dst, d1, a, ia1, b, ib, n, stride)
        vdotsub(dst, d2, a, ia2, b, ib, n, stride)

    def vfill(dst, d, src, s, x, ix, y, iy, u, iu, v, iv):  # type: ignore[no-untyped-def]
        """dst[d:d+8] = src[s:+8] + x[ix:+8] * y[iy:+8] - u[iu:+8] * v[iv:+8]."""
        prod = x[ix : ix + LANES] * y[iy : iy + LANES]
        dst[d : d + LANES] = (src[s : s + LANES] + prod) - u[iu : iu + LANES] * v[iv : iv + LANES]

    def vmul(dst, d, f, i_f):  # type: ignore[no-untyped-def]
        """dst[d:d+8] *= f[i_f:+8]."""
        dst[d : d + LANES] *= f[i_f : i_f + LANES]

    def vsqrt_inv(dst, d, inv, i):  # type: ignore[no-untyped-def]
        """dst[d:d+8] = sqrt(dst[d:d+8]); inv[i:i+8] = 1 / that."""
        dst[d : d + LANES] = np.sqrt(dst[d : d + LANES])
        inv[i : i + LANES] = 1.0 / dst[d : d + LANES]

    def vcopy(dst, d, src, s):  # type: ignore[no-untyped-def]
        """dst[d:d+8] = src[s:s+8]."""
        dst[d : d + LANES] = src[s : s + LANES]

    def vschur(m, e, c, y, lv, rs, nk, out_e, out_ssr, out_c):  # type: ignore[no-untyped-def]
        """The trailing 2x2 Schur complement after each of 0..nk eliminated columns.

        Starting from the vectors e = m[e:+8], c = m[c:+8], y = m[y:+8], for k = 0..nk write
        out_e[8k:+8] = e, out_c[8k:+8] = c, out_ssr[8k:+8] = y - c^2 / e, then (k < nk) with
        u = m[lv + 8k:+8], v = m[rs + 8k:+8]: e -= u^2, c -= u v, y -= v^2.
        """
        ev = m[e : e + LANES].copy()
        cv = m[c : c + LANES].copy()
        yv = m[y : y + LANES].copy()
        for k in range(nk + 1):
            with np.errstate(divide="ignore", invalid="ignore"):
                out_ssr[k * LANES : (k + 1) * LANES] = yv - cv * cv / ev
            out_e[k * LANES : (k + 1) * LANES] = ev
            out_c[k * LANES : (k + 1) * LANES] = cv
            if k < nk:
                u = m[lv + k * LANES : lv + (k + 1) * LANES]
                v = m[rs + k * LANES : rs + (k + 1) * LANES]
                ev = ev - u * u
                cv = cv - u * v
                yv = yv - v * v

else:
    from llvmlite import ir
    from numba.core import cgutils

    _VEC = ir.VectorType(ir.DoubleType(), LANES)

    def _vptr(context, builder, aryty, ary, idx):  # type: ignore[no-untyped-def]
        arr = context.make_array(aryty)(context, builder, ary)
        ptr = builder.gep(arr.data, [idx])
        return builder.bitcast(ptr, _VEC.as_pointer())

    @intrinsic
    def vdotsub(typingctx, dst, d, a, ia, b, ib, n, stride):  # type: ignore[no-untyped-def]
        """dst[d:d+8] -= sum over q < n of a[ia + q stride:+8] * b[ib + q stride:+8].

        The sum runs in four interleaved partial sums (q mod 4), added at the end, so the
        additions do not wait on each other.
        """
        sig = types.void(dst, d, a, ia, b, ib, n, stride)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            tys = signature.args
            pdst = _vptr(context, builder, tys[0], args[0], args[1])
            arr_a = context.make_array(tys[2])(context, builder, args[2])
            arr_b = context.make_array(tys[4])(context, builder, args[4])
            i64 = ir.IntType(64)
            n, stride = args[6], args[7]
            accs = [cgutils.alloca_once(builder, _VEC) for _ in range(4)]
            for acc in accs:
                builder.store(ir.Constant(_VEC, None), acc)

            def term(q):  # type: ignore[no-untyped-def]
                off = builder.mul(q, stride)
                pa = builder.bitcast(builder.gep(arr_a.data, [builder.add(args[3], off)]), _VEC.as_pointer())
                pb = builder.bitcast(builder.gep(arr_b.data, [builder.add(args[5], off)]), _VEC.as_pointer())
                return builder.fmul(builder.load(pa, align=8), builder.load(pb, align=8))

            quads = builder.sdiv(n, ir.Constant(i64, 4))
            with cgutils.for_range(builder, quads) as loop:
                base = builder.mul(loop.index, ir.Constant(i64, 4))
                for k, acc in enumerate(accs):
                    prod = term(builder.add(base, ir.Constant(i64, k)))
                    builder.store(builder.fadd(builder.load(acc), prod), acc)
            done = builder.mul(quads, ir.Constant(i64, 4))
            with cgutils.for_range(builder, builder.sub(n, done)) as loop:
                prod = term(builder.add(done, loop.index))
                builder.store(builder.fadd(builder.load(accs[0]), prod), accs[0])
            total = builder.fadd(
                builder.fadd(builder.load(accs[0]), builder.load(accs[1])),
                builder.fadd(builder.load(accs[2]), builder.load(accs[3])),
            )
            builder.store(builder.fsub(builder.load(pdst, align=8), total), pdst, align=8)
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def vfill(typingctx, dst, d, src, s, x, ix, y, iy, u, iu, v, iv):  # type: ignore[no-untyped-def]
        """dst[d:d+8] = src[s:+8] + x[ix:+8] * y[iy:+8] - u[iu:+8] * v[iv:+8]."""
        sig = types.void(dst, d, src, s, x, ix, y, iy, u, iu, v, iv)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            tys = signature.args
            vals = [
                builder.load(_vptr(context, builder, tys[k], args[k], args[k + 1]), align=8)
                for k in (2, 4, 6, 8, 10)
            ]
            first = builder.fadd(vals[0], builder.fmul(vals[1], vals[2]))
            out = builder.fsub(first, builder.fmul(vals[3], vals[4]))
            builder.store(out, _vptr(context, builder, tys[0], args[0], args[1]), align=8)
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def vmul(typingctx, dst, d, f, i_f):  # type: ignore[no-untyped-def]
        """dst[d:d+8] *= f[i_f:+8]."""
        sig = types.void(dst, d, f, i_f)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            tys = signature.args
            pdst = _vptr(context, builder, tys[0], args[0], args[1])
            pf = _vptr(context, builder, tys[2], args[2], args[3])
            builder.store(builder.fmul(builder.load(pdst, align=8), builder.load(pf, align=8)), pdst, align=8)
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def vsqrt_inv(typingctx, dst, d, inv, i):  # type: ignore[no-untyped-def]
        """dst[d:d+8] = sqrt(dst[d:d+8]); inv[i:i+8] = 1 / that."""
        sig = types.void(dst, d, inv, i)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            tys = signature.args
            pdst = _vptr(context, builder, tys[0], args[0], args[1])
            pinv = _vptr(context, builder, tys[2], args[2], args[3])
            fnty = ir.FunctionType(_VEC, [_VEC])
            sqrt = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.sqrt.v{LANES}f64")
            root = builder.call(sqrt, [builder.load(pdst, align=8)])
            builder.store(root, pdst, align=8)
            one = ir.Constant(_VEC, [1.0] * LANES)
            builder.store(builder.fdiv(one, root), pinv, align=8)
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def vcopy(typingctx, dst, d, src, s):  # type: ignore[no-untyped-def]
        """dst[d:d+8] = src[s:s+8]."""
        sig = types.void(dst, d, src, s)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            tys = signature.args
            value = builder.load(_vptr(context, builder, tys[2], args[2], args[3]), align=8)
            builder.store(value, _vptr(context, builder, tys[0], args[0], args[1]), align=8)
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def vschur(typingctx, m, e, c, y, lv, rs, nk, out_e, out_ssr, out_c):  # type: ignore[no-untyped-def]
        """The trailing 2x2 Schur complement after each of 0..nk eliminated columns.

        Starting from the vectors e = m[e:+8], c = m[c:+8], y = m[y:+8], for k = 0..nk write
        out_e[8k:+8] = e, out_c[8k:+8] = c, out_ssr[8k:+8] = y - c^2 / e, then (k < nk) with
        u = m[lv + 8k:+8], v = m[rs + 8k:+8]: e -= u^2, c -= u v, y -= v^2.
        """
        sig = types.void(m, e, c, y, lv, rs, nk, out_e, out_ssr, out_c)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            tys = signature.args
            i64 = ir.IntType(64)
            lanes = ir.Constant(i64, LANES)
            mat = context.make_array(tys[0])(context, builder, args[0])
            outs = [context.make_array(tys[k])(context, builder, args[k]) for k in (7, 8, 9)]

            def at(arr, idx):  # type: ignore[no-untyped-def]
                return builder.bitcast(builder.gep(arr.data, [idx]), _VEC.as_pointer())

            accs = []
            for k in (1, 2, 3):
                acc = cgutils.alloca_once(builder, _VEC)
                builder.store(builder.load(at(mat, args[k]), align=8), acc)
                accs.append(acc)
            ev, cv, yv = accs
            with cgutils.for_range(builder, builder.add(args[6], ir.Constant(i64, 1))) as loop:
                k = loop.index
                off = builder.mul(k, lanes)
                e_now, c_now, y_now = (builder.load(a) for a in accs)
                ssr = builder.fsub(y_now, builder.fdiv(builder.fmul(c_now, c_now), e_now))
                builder.store(e_now, at(outs[0], off), align=8)
                builder.store(ssr, at(outs[1], off), align=8)
                builder.store(c_now, at(outs[2], off), align=8)
                with builder.if_then(builder.icmp_signed("<", k, args[6])):
                    u = builder.load(at(mat, builder.add(args[4], off)), align=8)
                    v = builder.load(at(mat, builder.add(args[5], off)), align=8)
                    builder.store(builder.fsub(e_now, builder.fmul(u, u)), ev)
                    builder.store(builder.fsub(c_now, builder.fmul(u, v)), cv)
                    builder.store(builder.fsub(y_now, builder.fmul(v, v)), yv)
            return context.get_dummy_value()

        return sig, codegen

    @intrinsic
    def vfma_chains(typingctx, n, a, b):  # type: ignore[no-untyped-def]
        """FMA_CHAINS independent eight-wide chains acc = fma(acc, a, b), n steps each, from
        acc = 1; returns the sum of every lane of every chain (2 * 8 * FMA_CHAINS * n flops).
        The machine's peak: nothing but fused multiply-adds, none waiting on another."""
        sig = types.float64(n, a, b)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            fnty = ir.FunctionType(_VEC, [_VEC, _VEC, _VEC])
            fma = cgutils.get_or_insert_function(builder.module, fnty, f"llvm.fma.v{LANES}f64")
            va = cgutils.alloca_once(builder, _VEC)
            vb = cgutils.alloca_once(builder, _VEC)
            undef = ir.Constant(_VEC, None)
            builder.store(undef, va)
            builder.store(undef, vb)
            for k in range(LANES):
                builder.store(
                    builder.insert_element(builder.load(va), args[1], ir.Constant(ir.IntType(32), k)), va
                )
                builder.store(
                    builder.insert_element(builder.load(vb), args[2], ir.Constant(ir.IntType(32), k)), vb
                )
            accs = [cgutils.alloca_once(builder, _VEC) for _ in range(FMA_CHAINS)]
            for acc in accs:
                builder.store(ir.Constant(_VEC, [1.0] * LANES), acc)
            a_vec = builder.load(va)
            b_vec = builder.load(vb)
            with cgutils.for_range(builder, args[0]):
                for acc in accs:
                    builder.store(builder.call(fma, [builder.load(acc), a_vec, b_vec]), acc)
            total = builder.load(accs[0])
            for acc in accs[1:]:
                total = builder.fadd(total, builder.load(acc))
            out = builder.extract_element(total, ir.Constant(ir.IntType(32), 0))
            for k in range(1, LANES):
                out = builder.fadd(out, builder.extract_element(total, ir.Constant(ir.IntType(32), k)))
            return out

        return sig, codegen

    @intrinsic
    def vdotsub2(typingctx, dst, d1, d2, a, ia1, ia2, b, ib, n, stride):  # type: ignore[no-untyped-def]
        """:func:`vdotsub` into dst[d1] with a row at ia1 and into dst[d2] with a row at ia2,
        against the same b row (loaded once); two partial sums per destination."""
        sig = types.void(dst, d1, d2, a, ia1, ia2, b, ib, n, stride)

        def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
            tys = signature.args
            i64 = ir.IntType(64)
            arr_a = context.make_array(tys[3])(context, builder, args[3])
            arr_b = context.make_array(tys[6])(context, builder, args[6])
            n, stride = args[8], args[9]
            accs = [cgutils.alloca_once(builder, _VEC) for _ in range(4)]
            for acc in accs:
                builder.store(ir.Constant(_VEC, None), acc)

            def load(arr, base, q):  # type: ignore[no-untyped-def]
                idx = builder.add(base, builder.mul(q, stride))
                return builder.load(builder.bitcast(builder.gep(arr.data, [idx]), _VEC.as_pointer()), align=8)

            def step(q, first, second):  # type: ignore[no-untyped-def]
                vb = load(arr_b, args[7], q)
                for acc, base in ((first, args[4]), (second, args[5])):
                    prod = builder.fmul(load(arr_a, base, q), vb)
                    builder.store(builder.fadd(builder.load(acc), prod), acc)

            pairs = builder.sdiv(n, ir.Constant(i64, 2))
            with cgutils.for_range(builder, pairs) as loop:
                base = builder.mul(loop.index, ir.Constant(i64, 2))
                step(base, accs[0], accs[1])
                step(builder.add(base, ir.Constant(i64, 1)), accs[2], accs[3])
            done = builder.mul(pairs, ir.Constant(i64, 2))
            with builder.if_then(builder.icmp_signed("<", done, n)):
                step(done, accs[0], accs[1])
            for k, dst_off in ((0, args[1]), (1, args[2])):
                pdst = _vptr(context, builder, tys[0], args[0], dst_off)
                total = builder.fadd(builder.load(accs[k]), builder.load(accs[k + 2]))
                builder.store(builder.fsub(builder.load(pdst, align=8), total), pdst, align=8)
            return context.get_dummy_value()

        return sig, codegen

    def _make_block(nr, nc):  # type: ignore[no-untyped-def]
        """The nr x nc register block of :func:`vblock` (nr * nc accumulators, one load of each
        of the nr + nc row vectors per step)."""

        @intrinsic
        def block(typingctx, dst, a, b, row, n):  # type: ignore[no-untyped-def]
            sig = types.void(dst, a, b, row, n)

            def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
                i64 = ir.IntType(64)
                arr = context.make_array(signature.args[0])(context, builder, args[0])
                a_off, b_off, row, n = args[1], args[2], args[3], args[4]
                lanes = ir.Constant(i64, LANES)

                def at(idx):  # type: ignore[no-untyped-def]
                    return builder.bitcast(builder.gep(arr.data, [idx]), _VEC.as_pointer())

                a_rows = [builder.add(a_off, builder.mul(ir.Constant(i64, r), row)) for r in range(nr)]
                b_rows = [builder.add(b_off, builder.mul(ir.Constant(i64, c), row)) for c in range(nc)]
                accs = [[cgutils.alloca_once(builder, _VEC) for _ in range(nc)] for _ in range(nr)]
                for acc_row in accs:
                    for acc in acc_row:
                        builder.store(ir.Constant(_VEC, [0.0] * LANES), acc)
                with cgutils.for_range(builder, n) as loop:
                    off = builder.mul(loop.index, lanes)
                    va = [builder.load(at(builder.add(base, off)), align=8) for base in a_rows]
                    vb = [builder.load(at(builder.add(base, off)), align=8) for base in b_rows]
                    for r in range(nr):
                        for c in range(nc):
                            acc = accs[r][c]
                            builder.store(builder.fadd(builder.load(acc), builder.fmul(va[r], vb[c])), acc)
                for r in range(nr):
                    for c in range(nc):
                        col = builder.mul(builder.add(n, ir.Constant(i64, c)), lanes)
                        ptr = at(builder.add(a_rows[r], col))
                        out = builder.fsub(builder.load(ptr, align=8), builder.load(accs[r][c]))
                        builder.store(out, ptr, align=8)
                return context.get_dummy_value()

            return sig, codegen

        return block

    _BLOCKS = {(nr, nc): _make_block(nr, nc) for nr in range(1, 5) for nc in (1, 2)}
    _b11, _b12, _b21, _b22, _b31, _b32, _b41, _b42 = (_BLOCKS[k] for k in sorted(_BLOCKS))

    from numba import njit as _njit

    @_njit(cache=True)
    def vblock(dst, a, b, row, n, nr, nc):  # type: ignore[no-untyped-def]
        """For r < nr <= 4, c < nc <= 2: dst[a + r row + 8 (n + c):+8] -= sum over q < n of
        dst[a + r row + 8 q:+8] * dst[b + c row + 8 q:+8], the nr x nc products held in
        registers (nr + nc loads for nr nc multiply-adds a step)."""
        if nc == 2:
            if nr == 4:
                _b42(dst, a, b, row, n)
            elif nr == 3:
                _b32(dst, a, b, row, n)
            elif nr == 2:
                _b22(dst, a, b, row, n)
            else:
                _b12(dst, a, b, row, n)
        else:
            if nr == 4:
                _b41(dst, a, b, row, n)
            elif nr == 3:
                _b31(dst, a, b, row, n)
            elif nr == 2:
                _b21(dst, a, b, row, n)
            else:
                _b11(dst, a, b, row, n)

    class _Vec:
        """An eight-wide value under construction: + - * emit the vector instruction."""

        def __init__(self, builder, value):  # type: ignore[no-untyped-def]
            self.b = builder
            self.v = value

        def __add__(self, other):  # type: ignore[no-untyped-def]
            return _Vec(self.b, self.b.fadd(self.v, other.v))

        def __sub__(self, other):  # type: ignore[no-untyped-def]
            return _Vec(self.b, self.b.fsub(self.v, other.v))

        def __mul__(self, other):  # type: ignore[no-untyped-def]
            return _Vec(self.b, self.b.fmul(self.v, other.v))

    def vexpr(fn):  # type: ignore[no-untyped-def]
        """An eight-wide operation written as an expression: ``op(dst, d, arrs, offs, scal)``
        sets dst[d:d+8] = fn(dst[d:d+8], [arrs[k][offs[k]:+8] for each k], scal), where arrs is
        a tuple of 1-D C-contiguous float64 arrays, offs a tuple of as many ints and scal a
        tuple of floats (each taken as eight copies). fn combines them with + - * (evaluated
        left to right as written, as the plain Python twin does), e.g.
        ``lambda d, v, s: d + (s[0] * v[0] + v[1] * s[1])``."""

        @intrinsic
        def op(typingctx, dst, d, arrs, offs, scal):  # type: ignore[no-untyped-def]
            sig = types.void(dst, d, arrs, offs, scal)

            def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
                tys = signature.args
                pdst = _vptr(context, builder, tys[0], args[0], args[1])
                vecs = []
                for k in range(len(tys[2])):
                    arr = builder.extract_value(args[2], k)
                    off = builder.extract_value(args[3], k)
                    ptr = _vptr(context, builder, tys[2][k], arr, off)
                    vecs.append(_Vec(builder, builder.load(ptr, align=8)))
                scal_v = []
                for k in range(len(tys[4])):
                    one = builder.extract_value(args[4], k)
                    vec = ir.Constant(_VEC, None)
                    for ln in range(LANES):
                        vec = builder.insert_element(vec, one, ir.Constant(ir.IntType(32), ln))
                    scal_v.append(_Vec(builder, vec))
                out = fn(_Vec(builder, builder.load(pdst, align=8)), vecs, scal_v)
                builder.store(out.v, pdst, align=8)
                return context.get_dummy_value()

            return sig, codegen

        return op
