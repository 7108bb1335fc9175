-- x86-64 CPUs by ISA level: features, their per-core per-cycle throughput, the architectures
-- that have them, and products.
--
-- isa_throughput.ops_per_cycle is per core, an FMA counting 2 operations, for a typical
-- implementation with two full-width FMA pipes (two 256-bit pipes for AVX2/AVX-VNNI, two 512-bit
-- pipes for AVX-512). Where an architecture differs (Zen 4 runs 512-bit operations as two
-- 256-bit halves) the product peaks below use the real rate and say so; the schema has no
-- per-architecture throughput override, so peak = cores x clock x feature rate only holds where
-- the implementation matches the typical one.
-- 'emulated' rows: the format is converted to FP32 (F16C vcvtph2ps, or a 16-bit shift for BF16;
-- TF32 is computed as FP32) and computed at the FP32 FMA rate; the figure is an upper bound
-- (conversions take issue slots too). INT4 has no throughput row: it is unpacked to INT8 at a
-- cost that depends on the kernel.
-- requires: the flag names Linux prints in /proc/cpuinfo (arch/x86/include/asm/cpufeatures.h).

INSERT INTO source (id, title, url) VALUES
  ('linux-x86-cpufeatures', 'Linux kernel: arch/x86/include/asm/cpufeatures.h', 'https://github.com/torvalds/linux/blob/master/arch/x86/include/asm/cpufeatures.h'),
  ('intel-optimization-manual', 'Intel 64 and IA-32 Architectures Optimization Reference Manual', NULL),
  ('amd-zen3-sog', 'Software Optimization Guide for AMD EPYC 7003 Processors', NULL),
  ('amd-zen4-sog', 'Software Optimization Guide for the AMD Zen4 Microarchitecture', NULL),
  ('amd-epyc-7763-specs', 'AMD EPYC 7763 - Specifications', NULL),
  ('amd-ryzen-5950x-specs', 'AMD Ryzen 9 5950X Desktop Processor - Specifications', NULL),
  ('amd-epyc-9654-specs', 'AMD EPYC 9654 - Specifications', NULL),
  ('intel-xeon-8480plus-ark', 'Intel Xeon Platinum 8480+ Processor (105M Cache, 2.00 GHz) - Product Specifications', NULL),
  ('intel-core-i5-12400-ark', 'Intel Core i5-12400 Processor (18M Cache, up to 4.40 GHz) - Product Specifications', NULL);

INSERT INTO isa_feature (name, isa, requires, description, source) VALUES
  ('avx2-fma',    'x86-64', 'avx2 fma f16c',     'AVX2 + FMA3 on 256-bit vectors, F16C half<->single conversion', 'linux-x86-cpufeatures'),
  ('avx512f',     'x86-64', 'avx512f',           'AVX-512 Foundation: 512-bit FP32/FP64 FMA (vcvtph2ps zmm for FP16 storage)', 'linux-x86-cpufeatures'),
  ('avx512-vnni', 'x86-64', 'avx512_vnni',       'AVX-512 VNNI: vpdpbusd u8 x s8 -> s32 dot product on 512-bit vectors', 'linux-x86-cpufeatures'),
  ('avx512-bf16', 'x86-64', 'avx512_bf16',       'AVX-512 BF16: vdpbf16ps bf16 pair dot product into FP32', 'linux-x86-cpufeatures'),
  ('avx512-fp16', 'x86-64', 'avx512_fp16',       'AVX-512 FP16: native half-precision arithmetic (vfmadd*ph)', 'linux-x86-cpufeatures'),
  ('amx-bf16',    'x86-64', 'amx_tile amx_bf16', 'AMX tiles with TDPBF16PS (BF16 in, FP32 accumulate)', 'linux-x86-cpufeatures'),
  ('amx-int8',    'x86-64', 'amx_tile amx_int8', 'AMX tiles with TDPBSSD/TDPBSUD/TDPBUSD/TDPBUUD (INT8 in, INT32 accumulate)', 'linux-x86-cpufeatures'),
  ('avx-vnni',    'x86-64', 'avx_vnni',          'AVX-VNNI: VEX-encoded vpdpbusd on 256-bit vectors', 'linux-x86-cpufeatures');

INSERT INTO isa_throughput (feature, format, op_class, level, ops_per_cycle, source) VALUES
  -- AVX2+FMA, 2 x 256-bit FMA pipes:
  --   FP64: 2 pipes x 4 lanes x 2 = 16; FP32: 2 x 8 x 2 = 32.
  --   INT8: vpmaddubsw (32 u8 x s8 products, pairwise added) + vpmaddwd (to s32) = 2 multiply-pipe
  --   uops per 32 MACs; at 2 such uops per cycle that is 32 MACs = 64 ops/cycle (2x FP32).
  ('avx2-fma', 'fp64', 'vector', 'native',   16, 'intel-optimization-manual'),
  ('avx2-fma', 'fp32', 'vector', 'native',   32, 'intel-optimization-manual'),
  ('avx2-fma', 'tf32', 'vector', 'emulated', 32, 'intel-optimization-manual'),
  ('avx2-fma', 'fp16', 'vector', 'emulated', 32, 'intel-optimization-manual'),
  ('avx2-fma', 'bf16', 'vector', 'emulated', 32, 'intel-optimization-manual'),
  ('avx2-fma', 'int8', 'vector', 'native',   64, 'intel-optimization-manual'),
  -- AVX-512F, 2 x 512-bit FMA pipes: FP64 2 x 8 x 2 = 32, FP32 2 x 16 x 2 = 64. (512-bit integer
  -- byte multiplies need AVX512BW, not required here; INT8 comes from the VNNI rows.)
  ('avx512f', 'fp64', 'vector', 'native',   32, 'intel-optimization-manual'),
  ('avx512f', 'fp32', 'vector', 'native',   64, 'intel-optimization-manual'),
  ('avx512f', 'tf32', 'vector', 'emulated', 64, 'intel-optimization-manual'),
  ('avx512f', 'fp16', 'vector', 'emulated', 64, 'intel-optimization-manual'),
  ('avx512f', 'bf16', 'vector', 'emulated', 64, 'intel-optimization-manual'),
  -- AVX-512 VNNI: vpdpbusd zmm = 16 lanes x 4 MACs = 64 MACs = 128 ops; 2 per cycle = 256.
  ('avx512-vnni', 'int8', 'vector', 'native', 256, 'intel-optimization-manual'),
  -- AVX-512 BF16: vdpbf16ps zmm = 16 lanes x 2 bf16 products = 32 MACs = 64 ops; 2 per cycle = 128
  -- (twice the FP32 FMA rate).
  ('avx512-bf16', 'bf16', 'vector', 'native', 128, 'intel-optimization-manual'),
  -- AVX-512 FP16: vfmadd*ph zmm = 32 lanes x 2 ops; 2 per cycle = 128.
  ('avx512-fp16', 'fp16', 'vector', 'native', 128, 'intel-optimization-manual'),
  -- AMX (Sapphire Rapids): Intel gives 1024 BF16 ops/cycle and 2048 INT8 ops/cycle per core
  -- (TMUL: 16x32 bf16 / 16x64 int8 tile dot products, one per 16 cycles).
  ('amx-bf16', 'bf16', 'matrix', 'native', 1024, 'intel-optimization-manual'),
  ('amx-int8', 'int8', 'matrix', 'native', 2048, 'intel-optimization-manual'),
  -- AVX-VNNI: vpdpbusd ymm = 8 lanes x 4 MACs = 32 MACs = 64 ops; 2 per cycle = 128.
  ('avx-vnni', 'int8', 'vector', 'native', 128, 'intel-optimization-manual');

INSERT INTO architecture (name, vendor, kind, family, compute_capability, gfx_target, fp8_flavor, source) VALUES
  ('zen3',            'AMD',   'cpu', 'Zen 3',           NULL, NULL, 'none', 'amd-zen3-sog'),
  ('zen4',            'AMD',   'cpu', 'Zen 4',           NULL, NULL, 'none', 'amd-zen4-sog'),
  ('sapphire-rapids', 'Intel', 'cpu', 'Sapphire Rapids', NULL, NULL, 'none', 'intel-optimization-manual'),
  ('alder-lake',      'Intel', 'cpu', 'Alder Lake',      NULL, NULL, 'none', 'intel-optimization-manual');

-- Zen 4 implements AVX-512 (F, VNNI, BF16, not FP16) on a 256-bit datapath: a 512-bit
-- instruction is executed as two 256-bit halves ("double-pumped"), so its per-cycle rate equals
-- AVX2's. It has no VEX AVX-VNNI. Alder Lake client parts ship with AVX-512 fused off.
INSERT INTO arch_feature (arch, feature) VALUES
  ('zen3', 'avx2-fma'),
  ('zen4', 'avx2-fma'), ('zen4', 'avx512f'), ('zen4', 'avx512-vnni'), ('zen4', 'avx512-bf16'),
  ('sapphire-rapids', 'avx2-fma'), ('sapphire-rapids', 'avx512f'), ('sapphire-rapids', 'avx512-vnni'),
  ('sapphire-rapids', 'avx512-bf16'), ('sapphire-rapids', 'avx512-fp16'), ('sapphire-rapids', 'amx-bf16'),
  ('sapphire-rapids', 'amx-int8'), ('sapphire-rapids', 'avx-vnni'),
  ('alder-lake', 'avx2-fma'), ('alder-lake', 'avx-vnni');

-- Support matrix. 'vector' = AVX2/AVX-512 units, 'matrix' = AMX. FP8/FP4: no x86 conversion
-- instructions on these parts -> 'absent'. INT4: unpacked to INT8 -> 'emulated'.
INSERT INTO support (arch, op_class, format, level, source) VALUES
  ('zen3', 'vector', 'fp64', 'native',   'amd-zen3-sog'),
  ('zen3', 'vector', 'fp32', 'native',   'amd-zen3-sog'),
  ('zen3', 'vector', 'tf32', 'emulated', 'amd-zen3-sog'),
  ('zen3', 'vector', 'bf16', 'emulated', 'amd-zen3-sog'),
  ('zen3', 'vector', 'fp16', 'emulated', 'amd-zen3-sog'),
  ('zen3', 'vector', 'fp8',  'absent',   'amd-zen3-sog'),
  ('zen3', 'vector', 'fp4',  'absent',   'amd-zen3-sog'),
  ('zen3', 'vector', 'int8', 'native',   'amd-zen3-sog'),
  ('zen3', 'vector', 'int4', 'emulated', 'amd-zen3-sog'),
  ('zen3', 'matrix', 'fp64', 'absent',   'amd-zen3-sog'),
  ('zen3', 'matrix', 'fp32', 'absent',   'amd-zen3-sog'),
  ('zen3', 'matrix', 'tf32', 'absent',   'amd-zen3-sog'),
  ('zen3', 'matrix', 'bf16', 'absent',   'amd-zen3-sog'),
  ('zen3', 'matrix', 'fp16', 'absent',   'amd-zen3-sog'),
  ('zen3', 'matrix', 'fp8',  'absent',   'amd-zen3-sog'),
  ('zen3', 'matrix', 'fp4',  'absent',   'amd-zen3-sog'),
  ('zen3', 'matrix', 'int8', 'absent',   'amd-zen3-sog'),
  ('zen3', 'matrix', 'int4', 'absent',   'amd-zen3-sog'),

  ('zen4', 'vector', 'fp64', 'native',   'amd-zen4-sog'),
  ('zen4', 'vector', 'fp32', 'native',   'amd-zen4-sog'),
  ('zen4', 'vector', 'tf32', 'emulated', 'amd-zen4-sog'),
  ('zen4', 'vector', 'bf16', 'native',   'amd-zen4-sog'),
  ('zen4', 'vector', 'fp16', 'emulated', 'amd-zen4-sog'),
  ('zen4', 'vector', 'fp8',  'absent',   'amd-zen4-sog'),
  ('zen4', 'vector', 'fp4',  'absent',   'amd-zen4-sog'),
  ('zen4', 'vector', 'int8', 'native',   'amd-zen4-sog'),
  ('zen4', 'vector', 'int4', 'emulated', 'amd-zen4-sog'),
  ('zen4', 'matrix', 'fp64', 'absent',   'amd-zen4-sog'),
  ('zen4', 'matrix', 'fp32', 'absent',   'amd-zen4-sog'),
  ('zen4', 'matrix', 'tf32', 'absent',   'amd-zen4-sog'),
  ('zen4', 'matrix', 'bf16', 'absent',   'amd-zen4-sog'),
  ('zen4', 'matrix', 'fp16', 'absent',   'amd-zen4-sog'),
  ('zen4', 'matrix', 'fp8',  'absent',   'amd-zen4-sog'),
  ('zen4', 'matrix', 'fp4',  'absent',   'amd-zen4-sog'),
  ('zen4', 'matrix', 'int8', 'absent',   'amd-zen4-sog'),
  ('zen4', 'matrix', 'int4', 'absent',   'amd-zen4-sog'),

  ('sapphire-rapids', 'vector', 'fp64', 'native',   'intel-optimization-manual'),
  ('sapphire-rapids', 'vector', 'fp32', 'native',   'intel-optimization-manual'),
  ('sapphire-rapids', 'vector', 'tf32', 'emulated', 'intel-optimization-manual'),
  ('sapphire-rapids', 'vector', 'bf16', 'native',   'intel-optimization-manual'),
  ('sapphire-rapids', 'vector', 'fp16', 'native',   'intel-optimization-manual'),
  ('sapphire-rapids', 'vector', 'fp8',  'absent',   'intel-optimization-manual'),
  ('sapphire-rapids', 'vector', 'fp4',  'absent',   'intel-optimization-manual'),
  ('sapphire-rapids', 'vector', 'int8', 'native',   'intel-optimization-manual'),
  ('sapphire-rapids', 'vector', 'int4', 'emulated', 'intel-optimization-manual'),
  -- AMX on Sapphire Rapids: BF16 and INT8 only (AMX-FP16 arrives with Granite Rapids).
  ('sapphire-rapids', 'matrix', 'fp64', 'absent',   'intel-optimization-manual'),
  ('sapphire-rapids', 'matrix', 'fp32', 'absent',   'intel-optimization-manual'),
  ('sapphire-rapids', 'matrix', 'tf32', 'absent',   'intel-optimization-manual'),
  ('sapphire-rapids', 'matrix', 'bf16', 'native',   'intel-optimization-manual'),
  ('sapphire-rapids', 'matrix', 'fp16', 'absent',   'intel-optimization-manual'),
  ('sapphire-rapids', 'matrix', 'fp8',  'absent',   'intel-optimization-manual'),
  ('sapphire-rapids', 'matrix', 'fp4',  'absent',   'intel-optimization-manual'),
  ('sapphire-rapids', 'matrix', 'int8', 'native',   'intel-optimization-manual'),
  ('sapphire-rapids', 'matrix', 'int4', 'emulated', 'intel-optimization-manual'),

  ('alder-lake', 'vector', 'fp64', 'native',   'intel-optimization-manual'),
  ('alder-lake', 'vector', 'fp32', 'native',   'intel-optimization-manual'),
  ('alder-lake', 'vector', 'tf32', 'emulated', 'intel-optimization-manual'),
  ('alder-lake', 'vector', 'bf16', 'emulated', 'intel-optimization-manual'),
  ('alder-lake', 'vector', 'fp16', 'emulated', 'intel-optimization-manual'),
  ('alder-lake', 'vector', 'fp8',  'absent',   'intel-optimization-manual'),
  ('alder-lake', 'vector', 'fp4',  'absent',   'intel-optimization-manual'),
  ('alder-lake', 'vector', 'int8', 'native',   'intel-optimization-manual'),
  ('alder-lake', 'vector', 'int4', 'emulated', 'intel-optimization-manual'),
  ('alder-lake', 'matrix', 'fp64', 'absent',   'intel-optimization-manual'),
  ('alder-lake', 'matrix', 'fp32', 'absent',   'intel-optimization-manual'),
  ('alder-lake', 'matrix', 'tf32', 'absent',   'intel-optimization-manual'),
  ('alder-lake', 'matrix', 'bf16', 'absent',   'intel-optimization-manual'),
  ('alder-lake', 'matrix', 'fp16', 'absent',   'intel-optimization-manual'),
  ('alder-lake', 'matrix', 'fp8',  'absent',   'intel-optimization-manual'),
  ('alder-lake', 'matrix', 'fp4',  'absent',   'intel-optimization-manual'),
  ('alder-lake', 'matrix', 'int8', 'absent',   'intel-optimization-manual'),
  ('alder-lake', 'matrix', 'int4', 'absent',   'intel-optimization-manual');

-- Products. units = cores; boost_clock_ghz = the maximum (single-core) boost/turbo the vendor
-- quotes; all-core and AVX-512/AMX clocks are lower, so these peaks are upper bounds.
-- memory_gib is NULL (memory is not part of a CPU); memory_bandwidth_gbs = channels x MT/s x 8 B.
INSERT INTO product (name, short_name, vendor, arch, segment, memory_gib, memory_bandwidth_gbs, tdp_w, units, boost_clock_ghz, source) VALUES
  -- 64 cores, max boost 3.5 GHz, default TDP 280 W; 8 ch DDR4-3200: 8 x 3200 x 8 = 204.8 GB/s.
  ('AMD EPYC 7763', 'epyc-7763', 'AMD', 'zen3', 'server-cpu', NULL, 204.8, 280, 64, 3.5, 'amd-epyc-7763-specs'),
  -- 16 cores, max boost 4.9 GHz, 105 W; 2 ch DDR4-3200: 2 x 3200 x 8 = 51.2 GB/s.
  ('AMD Ryzen 9 5950X', 'ryzen-9-5950x', 'AMD', 'zen3', 'client-cpu', NULL, 51.2, 105, 16, 4.9, 'amd-ryzen-5950x-specs'),
  -- 96 cores, max boost 3.7 GHz, default TDP 360 W; 12 ch DDR5-4800: 12 x 4800 x 8 = 460.8 GB/s.
  ('AMD EPYC 9654', 'epyc-9654', 'AMD', 'zen4', 'server-cpu', NULL, 460.8, 360, 96, 3.7, 'amd-epyc-9654-specs'),
  -- 56 cores, max turbo 3.8 GHz, TDP 350 W; 8 ch DDR5-4800: 8 x 4800 x 8 = 307.2 GB/s.
  ('Intel Xeon Platinum 8480+', 'xeon-platinum-8480plus', 'Intel', 'sapphire-rapids', 'server-cpu', NULL, 307.2, 350, 56, 3.8, 'intel-xeon-8480plus-ark'),
  -- Alder Lake with P-cores only (6P + 0E, so no hybrid mix to account for): max turbo 4.4 GHz,
  -- processor base power 65 W; 2 ch DDR5-4800: 2 x 4800 x 8 = 76.8 GB/s (Intel's figure).
  ('Intel Core i5-12400', 'core-i5-12400', 'Intel', 'alder-lake', 'client-cpu', NULL, 76.8, 65, 6, 4.4, 'intel-core-i5-12400-ark');

-- Peaks = cores x boost clock x best native ops/cycle (TFLOPS/TOPS = 1e-3 x cores x GHz x ops).
-- Emulated formats (FP16/BF16 via FP32) get no peak row.
INSERT INTO peak (product, format, dense, op_class, source) VALUES
  -- EPYC 7763 (AVX2+FMA): 64 x 3.5 x 16 = 3584 GFLOPS; x 32 = 7168; INT8 x 64 = 14336 GOPS.
  ('AMD EPYC 7763', 'fp64', 3.584,  'vector', 'amd-epyc-7763-specs'),
  ('AMD EPYC 7763', 'fp32', 7.168,  'vector', 'amd-epyc-7763-specs'),
  ('AMD EPYC 7763', 'int8', 14.336, 'vector', 'amd-epyc-7763-specs'),
  -- Ryzen 9 5950X (AVX2+FMA): 16 x 4.9 x 16 = 1254.4; x 32 = 2508.8; INT8 x 64 = 5017.6.
  ('AMD Ryzen 9 5950X', 'fp64', 1.2544, 'vector', 'amd-ryzen-5950x-specs'),
  ('AMD Ryzen 9 5950X', 'fp32', 2.5088, 'vector', 'amd-ryzen-5950x-specs'),
  ('AMD Ryzen 9 5950X', 'int8', 5.0176, 'vector', 'amd-ryzen-5950x-specs'),
  -- EPYC 9654 (Zen 4, AVX-512 double-pumped on 2 x 256-bit pipes, so per cycle: FP64 16, FP32 32,
  -- BF16 vdpbf16ps 64, INT8 vpdpbusd 128 -- half the avx512* feature rows):
  -- 96 x 3.7 x 16 = 5683.2 GFLOPS; x 32 = 11366.4; BF16 x 64 = 22732.8; INT8 x 128 = 45465.6 GOPS.
  ('AMD EPYC 9654', 'fp64', 5.6832,  'vector', 'amd-zen4-sog'),
  ('AMD EPYC 9654', 'fp32', 11.3664, 'vector', 'amd-zen4-sog'),
  ('AMD EPYC 9654', 'bf16', 22.7328, 'vector', 'amd-zen4-sog'),
  ('AMD EPYC 9654', 'int8', 45.4656, 'vector', 'amd-zen4-sog'),
  -- Xeon Platinum 8480+ (AVX-512 on 2 x 512-bit FMA units, AMX):
  -- 56 x 3.8 x 32 = 6809.6 GFLOPS FP64; x 64 = 13619.2 FP32; FP16 (AVX512-FP16) x 128 = 27238.4;
  -- BF16 (AMX) x 1024 = 217907.2; INT8 (AMX) x 2048 = 435814.4 GOPS.
  ('Intel Xeon Platinum 8480+', 'fp64', 6.8096,   'vector', 'intel-xeon-8480plus-ark'),
  ('Intel Xeon Platinum 8480+', 'fp32', 13.6192,  'vector', 'intel-xeon-8480plus-ark'),
  ('Intel Xeon Platinum 8480+', 'fp16', 27.2384,  'vector', 'intel-xeon-8480plus-ark'),
  ('Intel Xeon Platinum 8480+', 'bf16', 217.9072, 'matrix', 'intel-xeon-8480plus-ark'),
  ('Intel Xeon Platinum 8480+', 'int8', 435.8144, 'matrix', 'intel-xeon-8480plus-ark'),
  -- Core i5-12400 (Golden Cove P-cores, 2 x 256-bit FMA, AVX-VNNI):
  -- 6 x 4.4 x 16 = 422.4 GFLOPS FP64; x 32 = 844.8 FP32; INT8 (AVX-VNNI) x 128 = 3379.2 GOPS.
  ('Intel Core i5-12400', 'fp64', 0.4224, 'vector', 'intel-core-i5-12400-ark'),
  ('Intel Core i5-12400', 'fp32', 0.8448, 'vector', 'intel-core-i5-12400-ark'),
  ('Intel Core i5-12400', 'int8', 3.3792, 'vector', 'intel-core-i5-12400-ark');
