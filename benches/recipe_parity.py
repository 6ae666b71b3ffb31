# PyTorch side of benches/recipe_parity.rs: trains the reference tutorial's network (written
# here from its description, not copied) with Adadelta and StepLR, batch 16, 3 epochs, on the first
# 2,000 / 500 Fashion-MNIST images, and prints the validation loss over all 500 images and over
# each half that DistributedSampler(num_replicas=2) gives (the reference's root validates shard 0).
# Needs torchvision's MNIST layout under DATA (default: the ddp_search work dir's data).
# Measure: the reference's validation loss covers its root rank's DistributedSampler shard (a fixed
# half of the validation set). Is that half easier than the whole set? Train networks, compare.
import sys, torch, torch.nn as nn, numpy as np
from torchvision.datasets import MNIST
from torchvision.transforms import Compose, Normalize, ToTensor
from torch.utils.data import Subset, DataLoader, DistributedSampler
torch.set_num_threads(1)
import os
root=os.environ.get('DATA', 'bench-results/ddp-search/data')
tf=Compose([ToTensor(), Normalize((0.1307,),(0.3081,))])
tr=Subset(MNIST(root=root,train=True,transform=tf,download=False),range(2000))
va=Subset(MNIST(root=root,train=False,transform=tf,download=False),range(500))
shard0=list(DistributedSampler(va,num_replicas=2,rank=0))
shard1=list(DistributedSampler(va,num_replicas=2,rank=1))
class Net(nn.Module):
    def __init__(s,L,act):
        super().__init__()
        ls=[nn.Conv2d(1,10,3,padding=1),act()]
        for _ in range(L-1): ls+=[nn.Conv2d(10,10,3,padding=1),act()]
        s.c=nn.Sequential(*ls); s.fc=nn.Linear(7840,10)
    def forward(s,x): return nn.functional.log_softmax(s.fc(s.c(x).flatten(1)),1)
acts={'relu':nn.ReLU,'tanh':nn.Tanh}
vx=torch.stack([va[i][0] for i in range(500)]); vy=torch.tensor([va[i][1] for i in range(500)])
for cfg in sys.argv[1:]:
    L,a,lr,g,seed=cfg.split(':'); torch.manual_seed(int(seed))
    net=Net(int(L),acts[a]); opt=torch.optim.Adadelta(net.parameters(),lr=float(lr))
    sch=torch.optim.lr_scheduler.StepLR(opt,1,gamma=float(g))
    for ep in range(3):
        for x,y in DataLoader(tr,batch_size=16,shuffle=True):
            opt.zero_grad(); nn.functional.nll_loss(net(x),y).backward(); opt.step()
        sch.step()
    with torch.no_grad(): per=nn.functional.nll_loss(net(vx),vy,reduction='none').numpy()
    print(cfg, 'all %.4f shard0 %.4f shard1 %.4f ratio0 %.3f'%(per.mean(), per[shard0].mean(), per[shard1].mean(), per[shard0].mean()/per.mean()), flush=True)
