-- AArch64 CPUs by ISA level: features, per-core per-cycle throughput, architectures, products.
--
-- ops_per_cycle: per core, an FMA counting 2, for the implementation named in each comment
-- (Advanced SIMD features: two 128-bit FP/SIMD pipes as on Neoverse N1; SVE: two 256-bit pipes as
-- on Neoverse V1; SVE2: two 128-bit pipes as on Neoverse N2). Neoverse V1 has four 128-bit
-- Advanced SIMD pipes (which pair up as the two 256-bit SVE pipes), so its NEON rates are the SVE
-- ones; peaks below use the 'sve' rows for it.
-- 'emulated' rows: converted to FP32 (fcvtl for FP16, shll #16 for BF16; TF32 is computed as
-- FP32) at the FP32 FMA rate, an upper bound. INT4 has no throughput row (unpacked to INT8 at a
-- kernel-dependent cost).
-- requires: the flag names Linux prints in /proc/cpuinfo (Documentation/arch/arm64/elf_hwcaps.rst).

INSERT INTO source (id, title, url) VALUES
  ('linux-arm64-elf-hwcaps', 'Linux kernel: ARM64 ELF hwcaps (Documentation/arch/arm64/elf_hwcaps.rst)', 'https://docs.kernel.org/arch/arm64/elf_hwcaps.html'),
  ('arm-arm', 'Arm Architecture Reference Manual for A-profile architecture', 'https://developer.arm.com/documentation/ddi0487/latest'),
  ('arm-neoverse-n1-sog', 'Arm Neoverse N1 Software Optimization Guide', NULL),
  ('arm-neoverse-v1-sog', 'Arm Neoverse V1 Software Optimization Guide', NULL),
  ('arm-neoverse-n2-sog', 'Arm Neoverse N2 Software Optimization Guide', NULL),
  ('aws-graviton-technical-guide', 'AWS Graviton Technical Guide', 'https://github.com/aws/aws-graviton-getting-started');

INSERT INTO isa_feature (name, isa, requires, description, source) VALUES
  ('neon',          'aarch64', 'asimd',   'Advanced SIMD (NEON): 128-bit FP32/FP64 FMA, integer SIMD', 'linux-arm64-elf-hwcaps'),
  ('asimd-fp16',    'aarch64', 'asimdhp', 'Advanced SIMD half-precision arithmetic (FEAT_FP16)', 'linux-arm64-elf-hwcaps'),
  ('asimd-dotprod', 'aarch64', 'asimddp', 'Advanced SIMD dot product: sdot/udot int8 -> int32 (FEAT_DotProd)', 'linux-arm64-elf-hwcaps'),
  ('i8mm',          'aarch64', 'i8mm',    'Int8 matrix multiply: smmla/ummla/usmmla 2x8 by 8x2 -> 2x2 int32 (FEAT_I8MM)', 'linux-arm64-elf-hwcaps'),
  ('arm-bf16',      'aarch64', 'bf16',    'BFloat16: bfdot, bfmmla 2x4 by 4x2 -> 2x2 fp32, bfcvt (FEAT_BF16)', 'linux-arm64-elf-hwcaps'),
  ('sve',           'aarch64', 'sve',     'Scalable Vector Extension (FP64/FP32/FP16 FMA, sdot) at the implementation''s vector length', 'linux-arm64-elf-hwcaps'),
  ('sve2',          'aarch64', 'sve2',    'Scalable Vector Extension 2', 'linux-arm64-elf-hwcaps');

INSERT INTO isa_throughput (feature, format, op_class, level, ops_per_cycle, source) VALUES
  -- NEON, 2 x 128-bit pipes (Neoverse N1): FP64 2 x 2 lanes x 2 = 8, FP32 2 x 4 x 2 = 16.
  -- (Plain NEON INT8 via smull/sadalp has no row: its rate depends on the multiply pipes and the
  -- widening sequence; INT8 comes from asimd-dotprod and later.)
  ('neon', 'fp64', 'vector', 'native',    8, 'arm-neoverse-n1-sog'),
  ('neon', 'fp32', 'vector', 'native',   16, 'arm-neoverse-n1-sog'),
  ('neon', 'tf32', 'vector', 'emulated', 16, 'arm-neoverse-n1-sog'),
  ('neon', 'fp16', 'vector', 'emulated', 16, 'arm-neoverse-n1-sog'),
  ('neon', 'bf16', 'vector', 'emulated', 16, 'arm-neoverse-n1-sog'),
  -- FP16 arithmetic, 2 x 128-bit: 2 x 8 lanes x 2 = 32.
  ('asimd-fp16', 'fp16', 'vector', 'native', 32, 'arm-neoverse-n1-sog'),
  -- sdot v.4s, v.16b, v.16b = 16 MACs = 32 ops; 2 per cycle = 64 (4x FP32).
  ('asimd-dotprod', 'int8', 'vector', 'native', 64, 'arm-neoverse-n1-sog'),
  -- smmla (128-bit): 2x2 outputs x 8 MACs = 32 MACs = 64 ops; 2 pipes = 128.
  ('i8mm', 'int8', 'matrix', 'native', 128, 'arm-arm'),
  -- bfmmla (128-bit): 2x2 outputs x 4 MACs = 16 MACs = 32 ops; 2 pipes = 64. (bfdot, the vector
  -- form, is 8 MACs = 16 ops per instruction, 32 per cycle; the schema keeps one row per format,
  -- the better one.)
  ('arm-bf16', 'bf16', 'matrix', 'native', 64, 'arm-arm'),
  -- SVE, 2 x 256-bit pipes (Neoverse V1): FP64 2 x 4 x 2 = 16, FP32 2 x 8 x 2 = 32,
  -- FP16 2 x 16 x 2 = 64, INT8 sdot 2 x 32 MACs x 2 = 128.
  ('sve', 'fp64', 'vector', 'native',    16, 'arm-neoverse-v1-sog'),
  ('sve', 'fp32', 'vector', 'native',    32, 'arm-neoverse-v1-sog'),
  ('sve', 'tf32', 'vector', 'emulated',  32, 'arm-neoverse-v1-sog'),
  ('sve', 'fp16', 'vector', 'native',    64, 'arm-neoverse-v1-sog'),
  ('sve', 'bf16', 'vector', 'emulated',  32, 'arm-neoverse-v1-sog'),
  ('sve', 'int8', 'vector', 'native',   128, 'arm-neoverse-v1-sog'),
  -- SVE2, 2 x 128-bit pipes (Neoverse N2): FP64 8, FP32 16, FP16 32, INT8 sdot 64.
  ('sve2', 'fp64', 'vector', 'native',    8, 'arm-neoverse-n2-sog'),
  ('sve2', 'fp32', 'vector', 'native',   16, 'arm-neoverse-n2-sog'),
  ('sve2', 'tf32', 'vector', 'emulated', 16, 'arm-neoverse-n2-sog'),
  ('sve2', 'fp16', 'vector', 'native',   32, 'arm-neoverse-n2-sog'),
  ('sve2', 'bf16', 'vector', 'emulated', 16, 'arm-neoverse-n2-sog'),
  ('sve2', 'int8', 'vector', 'native',   64, 'arm-neoverse-n2-sog');

INSERT INTO architecture (name, vendor, kind, family, compute_capability, gfx_target, fp8_flavor, source) VALUES
  ('neoverse-n1', 'Arm', 'cpu', 'Neoverse N1', NULL, NULL, 'none', 'arm-neoverse-n1-sog'),
  ('neoverse-v1', 'Arm', 'cpu', 'Neoverse V1', NULL, NULL, 'none', 'arm-neoverse-v1-sog');

-- Graviton2 (N1): Armv8.2 with fp16, dotprod. Graviton3 (V1): Armv8.4 + SVE (256-bit), bf16, i8mm
-- (AWS Graviton Technical Guide feature table).
INSERT INTO arch_feature (arch, feature) VALUES
  ('neoverse-n1', 'neon'), ('neoverse-n1', 'asimd-fp16'), ('neoverse-n1', 'asimd-dotprod'),
  ('neoverse-v1', 'neon'), ('neoverse-v1', 'asimd-fp16'), ('neoverse-v1', 'asimd-dotprod'),
  ('neoverse-v1', 'i8mm'), ('neoverse-v1', 'arm-bf16'), ('neoverse-v1', 'sve');

-- Support matrix. 'vector' = NEON/SVE, 'matrix' = the MMLA instructions (i8mm, bfmmla).
-- FP8/FP4: no conversion instructions before Armv9.2 FEAT_FP8 -> 'absent'.
INSERT INTO support (arch, op_class, format, level, source) VALUES
  ('neoverse-n1', 'vector', 'fp64', 'native',   'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'vector', 'fp32', 'native',   'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'vector', 'tf32', 'emulated', 'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'vector', 'bf16', 'emulated', 'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'vector', 'fp16', 'native',   'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'vector', 'fp8',  'absent',   'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'vector', 'fp4',  'absent',   'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'vector', 'int8', 'native',   'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'vector', 'int4', 'emulated', 'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'matrix', 'fp64', 'absent',   'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'matrix', 'fp32', 'absent',   'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'matrix', 'tf32', 'absent',   'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'matrix', 'bf16', 'absent',   'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'matrix', 'fp16', 'absent',   'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'matrix', 'fp8',  'absent',   'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'matrix', 'fp4',  'absent',   'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'matrix', 'int8', 'absent',   'arm-neoverse-n1-sog'),
  ('neoverse-n1', 'matrix', 'int4', 'absent',   'arm-neoverse-n1-sog'),

  ('neoverse-v1', 'vector', 'fp64', 'native',   'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'vector', 'fp32', 'native',   'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'vector', 'tf32', 'emulated', 'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'vector', 'bf16', 'native',   'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'vector', 'fp16', 'native',   'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'vector', 'fp8',  'absent',   'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'vector', 'fp4',  'absent',   'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'vector', 'int8', 'native',   'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'vector', 'int4', 'emulated', 'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'matrix', 'fp64', 'absent',   'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'matrix', 'fp32', 'absent',   'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'matrix', 'tf32', 'absent',   'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'matrix', 'bf16', 'native',   'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'matrix', 'fp16', 'absent',   'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'matrix', 'fp8',  'absent',   'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'matrix', 'fp4',  'absent',   'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'matrix', 'int8', 'native',   'arm-neoverse-v1-sog'),
  ('neoverse-v1', 'matrix', 'int4', 'emulated', 'arm-neoverse-v1-sog');

-- Products (AWS Graviton Technical Guide: cores, fixed frequency without turbo, DRAM channels).
-- AWS publishes no TDP for Graviton -> NULL. memory_gib NULL (not part of the CPU).
INSERT INTO product (name, short_name, vendor, arch, segment, memory_gib, memory_bandwidth_gbs, tdp_w, units, boost_clock_ghz, source) VALUES
  -- 64 Neoverse N1 cores at 2.5 GHz; 8 ch DDR4-3200: 8 x 3200 x 8 = 204.8 GB/s.
  ('AWS Graviton2', 'graviton2', 'AWS', 'neoverse-n1', 'server-cpu', NULL, 204.8, NULL, 64, 2.5, 'aws-graviton-technical-guide'),
  -- 64 Neoverse V1 cores at 2.6 GHz; 8 ch DDR5-4800: 8 x 4800 x 8 = 307.2 GB/s.
  ('AWS Graviton3', 'graviton3', 'AWS', 'neoverse-v1', 'server-cpu', NULL, 307.2, NULL, 64, 2.6, 'aws-graviton-technical-guide');

-- Peaks = cores x clock x best native ops/cycle among the architecture's features.
INSERT INTO peak (product, format, dense, op_class, source) VALUES
  -- Graviton2: 64 x 2.5 x 8 = 1280 GFLOPS FP64; x 16 = 2560 FP32; FP16 (asimd-fp16) x 32 = 5120;
  -- INT8 (sdot) x 64 = 10240 GOPS.
  ('AWS Graviton2', 'fp64', 1.28,  'vector', 'aws-graviton-technical-guide'),
  ('AWS Graviton2', 'fp32', 2.56,  'vector', 'aws-graviton-technical-guide'),
  ('AWS Graviton2', 'fp16', 5.12,  'vector', 'aws-graviton-technical-guide'),
  ('AWS Graviton2', 'int8', 10.24, 'vector', 'aws-graviton-technical-guide'),
  -- Graviton3 (SVE 2 x 256-bit = NEON 4 x 128-bit): 64 x 2.6 x 16 = 2662.4 GFLOPS FP64;
  -- x 32 = 5324.8 FP32; FP16 x 64 = 10649.6; BF16 (bfmmla, 'arm-bf16' row) x 64 = 10649.6;
  -- INT8 (smmla 'i8mm' row = SVE sdot row = 128) x 128 = 21299.2 GOPS.
  -- The i8mm/bf16 rows assume two pipes issue MMLA; if all four 128-bit pipes of V1 do, the BF16
  -- and INT8 peaks would be up to 2x these. Not confirmed, so the conservative figures are kept.
  ('AWS Graviton3', 'fp64', 2.6624,  'vector', 'aws-graviton-technical-guide'),
  ('AWS Graviton3', 'fp32', 5.3248,  'vector', 'aws-graviton-technical-guide'),
  ('AWS Graviton3', 'fp16', 10.6496, 'vector', 'aws-graviton-technical-guide'),
  ('AWS Graviton3', 'bf16', 10.6496, 'matrix', 'aws-graviton-technical-guide'),
  ('AWS Graviton3', 'int8', 21.2992, 'matrix', 'aws-graviton-technical-guide');
