# Builds and compares the kernels dump.cpp wrote (see its header); prints one line per distinct
# kernel and a summary {'ok', 'bad', 'err'}. Needs clang-19 and shim.hpp in the current directory.
import glob, os, subprocess, sys, re
sizes = {'f32': 4, 'f16': 2, 'bf16': 2, 'i64': 8, 'i32': 4, 'i8': 1, 'u8': 1, 'bool': 1}
main_t = r'''
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <cmath>
#include <random>
#include <thread>
#include <vector>
#include <barrier>
struct hpf_dim3 { unsigned x = 0, y = 0, z = 0; };
thread_local hpf_dim3 threadIdx, blockIdx;
hpf_dim3 blockDim, gridDim;
std::barrier<>* hpf_bar;
float hpf_xchg[1024];
extern "C" void NAME_c(void* const* args, long long b, long long e);
extern "C" void NAME(PARAMS);
float dec(const char* t, const unsigned char* p, long long i) {
  if (!strcmp(t, "f32")) { float f; memcpy(&f, p + 4 * i, 4); return f; }
  if (!strcmp(t, "bf16")) { uint16_t h; memcpy(&h, p + 2 * i, 2); uint32_t u = (uint32_t)h << 16; float f; memcpy(&f, &u, 4); return f; }
  if (!strcmp(t, "f16")) { _Float16 h; memcpy(&h, p + 2 * i, 2); return (float)h; }
  if (!strcmp(t, "i64")) { long long v; memcpy(&v, p + 8 * i, 8); return (float)v; }
  if (!strcmp(t, "i32")) { int v; memcpy(&v, p + 4 * i, 4); return (float)v; }
  if (!strcmp(t, "i8")) return (float)(signed char)p[i];
  return (float)p[i];
}
void enc(const char* t, unsigned char* p, long long i, float f) {
  if (!strcmp(t, "f32")) memcpy(p + 4 * i, &f, 4);
  else if (!strcmp(t, "bf16")) { uint32_t u; memcpy(&u, &f, 4); uint16_t h = u >> 16; memcpy(p + 2 * i, &h, 2); }
  else if (!strcmp(t, "f16")) { _Float16 h = (_Float16)f; memcpy(p + 2 * i, &h, 2); }
  else if (!strcmp(t, "i64")) { long long v = (long long)f; memcpy(p + 8 * i, &v, 8); }
  else if (!strcmp(t, "i32")) { int v = (int)f; memcpy(p + 4 * i, &v, 4); }
  else p[i] = (unsigned char)(int)f;
}
int main() {
  const char* ti[] = {INTYPES};
  const long long ni[] = {INNUM};
  const int nin = NIN;
  const char* to = "OUTTYPE"; const long long no = OUTNUM;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> U(-1.0f, 1.0f);
  std::vector<std::vector<unsigned char>> in(nin);
  for (int k = 0; k < nin; ++k) {
    in[k].resize(ni[k] * SZ(ti[k]) + 16);
    bool isint = !strcmp(ti[k], "i64") || !strcmp(ti[k], "i32");
    bool isbyte = !strcmp(ti[k], "i8") || !strcmp(ti[k], "u8");
    for (long long i = 0; i < ni[k]; ++i)
      enc(ti[k], in[k].data(), i, isint ? (float)(rng() % 3) : isbyte ? (float)((int)(rng() % 256) - (ti[k][0] == 'i' ? 128 : 0)) : U(rng));
  }
  std::vector<unsigned char> yc(no * SZ(to) + 16), yg(no * SZ(to) + 16, 0xAB);
  std::vector<void*> args;
  for (auto& b : in) args.push_back(b.data());
  args.push_back(yc.data());
  NAME_c(args.data(), 0, CWORK);
  const long long work = GWORK, grain = GRAIN;
  long long grid = (work + grain - 1) / grain; if (grid > 6) grid = 6; if (grid < 1) grid = 1;
  blockDim.x = grain; gridDim.x = grid;
  for (long long b = 0; b < grid; ++b) {
    std::barrier<> bar(grain); hpf_bar = &bar;
    std::vector<std::thread> th;
    for (long long t = 0; t < grain; ++t) th.emplace_back([&, b, t] { threadIdx.x = t; blockIdx.x = b; NAME(CALLARGS); });
    for (auto& x : th) x.join();
  }
  double worst = 0; long long bad = 0;
  for (long long i = 0; i < no; ++i) {
    float a = dec(to, yg.data(), i), r = dec(to, yc.data(), i);
    if (std::isnan(a) && std::isnan(r)) continue;
    double err = std::fabs((double)a - r) / (TOLA + TOLR * std::fabs((double)r));
    if (!(err <= 1.0)) { if (bad < 3) printf("  [%lld] gpu %g c %g\n", i, a, r); ++bad; }
    if (err > worst || std::isnan(err)) worst = err;
  }
  printf("%s %lld/%lld bad, worst %.3g tol-units\n", bad ? "MISMATCH" : "ok", bad, no, worst);
  return bad ? 1 : 0;
}
'''
only = sys.argv[1] if len(sys.argv) > 1 else None
res = {'ok': 0, 'bad': 0, 'err': 0}
seen = set()
skip = sys.argv[2] if len(sys.argv) > 2 else None
for txt in sorted(glob.glob('k*.txt'), key=lambda s: int(s[1:-4])):
    p = txt[:-4]
    lines = open(txt).read().split('\n')
    label = lines[0]
    if only and not re.search(only, label): continue
    if skip and re.search(skip, label): continue
    name, cwork, gwork, grain = lines[1].split()
    if name in seen: continue
    seen.add(name)
    ins = [l.split() for l in lines[2:] if l.startswith('in ')]
    out = [l.split() for l in lines[2:] if l.startswith('out ')][0]
    ctype = {'f32': 'float', 'f16': '_Float16', 'bf16': 'unsigned short', 'i64': 'long long', 'i32': 'int', 'i8': 'signed char', 'u8': 'unsigned char', 'bool': 'unsigned char'}
    params = ', '.join(['const %s*' % ctype[t] for _, t, _ in ins] + ['%s*' % ctype[out[1]]])
    callargs = ', '.join(['(const %s*)in[%d].data()' % (ctype[t], k) for k, (_, t, _) in enumerate(ins)] + ['(%s*)yg.data()' % ctype[out[1]]])
    low = out[1] in ('f16', 'bf16') or any(t in ('f16', 'bf16') for _, t, _ in ins)
    tola, tolr = ('1e-2', '1.6e-2') if 'bf16' in label else ('2e-3', '4e-3') if low else ('1e-5', '1e-4')
    m = main_t.replace('NAME', name).replace('PARAMS', params).replace('CALLARGS', callargs)
    m = m.replace('INTYPES', ', '.join('"%s"' % t for _, t, _ in ins)).replace('INNUM', ', '.join(n for _, _, n in ins)).replace('NIN', str(len(ins)))
    m = m.replace('OUTTYPE', out[1]).replace('OUTNUM', out[2]).replace('CWORK', cwork).replace('GWORK', gwork).replace('GRAIN', grain)
    m = m.replace('SZ(ti[k])', '(strcmp(ti[k],"f32")==0||strcmp(ti[k],"i32")==0?4:strcmp(ti[k],"i64")==0?8:strcmp(ti[k],"f16")==0||strcmp(ti[k],"bf16")==0?2:1)')
    m = m.replace('SZ(to)', str(sizes[out[1]])).replace('TOLA', tola).replace('TOLR', tolr)
    open(p + '_main.cpp', 'w').write(m)
    cmds = [['clang-19', '-O1', '-c', '-x', 'c', p + '.c', '-o', p + '_c.o', '-w'],
            ['clang++-19', '-std=c++20', '-O1', '-c', '-include', 'shim.hpp', '-x', 'c++', p + '.hip', '-o', p + '_g.o', '-w'],
            ['clang++-19', '-std=c++20', '-O1', p + '_main.cpp', p + '_c.o', p + '_g.o', '-o', p + '.exe', '-lm', '-pthread', '-w']]
    ok = True
    for c in cmds:
        r = subprocess.run(c, capture_output=True, text=True)
        if r.returncode: print(label, 'BUILD', ' '.join(c[:3]), r.stderr[:800]); ok = False; break
    if not ok: res['err'] += 1; continue
    r = subprocess.run(['./' + p + '.exe'], capture_output=True, text=True, timeout=300)
    print(label, '->', r.stdout.strip().replace('\n', ' | '))
    res['ok' if r.returncode == 0 else 'bad'] += 1
print(res)
