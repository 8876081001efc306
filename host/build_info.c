/*
 * quantbridge host — what `quantbridge --version` says about this build:
 * the git commit, build type and CUDA kernels, fixed when CMake configured
 * the tree (host/CMakeLists.txt passes them to this file only, so a new
 * commit recompiles one file, after the next configure).
 */
#include "qbh.h"

#ifndef QBH_GIT_COMMIT
#define QBH_GIT_COMMIT "unknown"
#endif
#ifndef QBH_BUILD_TYPE
#define QBH_BUILD_TYPE ""
#endif
#ifndef QBH_HAVE_CUDA
#define QBH_HAVE_CUDA 0
#endif

const char *qbh_build_commit(void)
{
    return QBH_GIT_COMMIT[0] ? QBH_GIT_COMMIT : "unknown";
}

const char *qbh_build_type(void)
{
    return QBH_BUILD_TYPE;
}

int qbh_build_cuda(void)
{
    return QBH_HAVE_CUDA;
}
