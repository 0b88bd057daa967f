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

__all__ = ["LANES", "vdotsub", "vfill", "vmul", "vsqrt_inv"]

LANES = 8

if config.DISABLE_JIT:

    def vdotsub(dst, d, a, ia, b, ib, n, stride):  # type: ignore[no-untyped-def]
        """dst[d:d+8] -= sum over q < n of a[ia + q stride:+8] * b[ib + q stride:+8]."""
        for q in range(n):
            dst[d : d + LANES] -= (
                a[ia + q * stride : ia + q * stride + LANES] * b[ib + q * stride : ib + q * stride + LANES]
            )

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
